"""What emits an event besides a job's last attempt: a provider's report about an email, an address put on the
suppression list (by a provider's event or by hand), and a send refused on arrival (docs/event-endpoints.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from event_endpoints.models import Event, EventType
from notifications.models import Job
from tests.conftest import Client, ready_to_send
from tests.event_endpoints.test_event_delivery import arrivals_at, subscribe
from tests.fakes.events import PostmarkEvents, SendGridEvents
from tests.fakes.receiver import Receiver
from tests.webhooks_inbound.conftest import SentEmail, post_events
from webhooks_inbound.models import EmailEvent

pytestmark = pytest.mark.usefixtures("worker")


def bodies(receiver: Receiver, path: str, count: int) -> list[dict[str, Any]]:
    return [json.loads(arrival.body) for arrival in arrivals_at(receiver, path, count)]


def test_a_hard_bounce_reaches_a_subscribed_endpoint_as_email_bounced_with_its_suppression(
    holder: Client, receiver: Receiver, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    subscribe(holder, receiver, "email.bounced", "suppression.created", "email.delivered", path="/all")
    subscribe(holder, receiver, "email.delivered", path="/delivered")
    job, message_id = sent_email(holder.account, "POSTMARK")
    bounce = postmark_events.event("Bounce", message_id=message_id, recipient="Ada@example.com")

    assert post_events("postmark", holder.account, postmark_events.deliver(bounce)).status_code == 200

    received = sorted(bodies(receiver, "/all", 2), key=lambda event: str(event["type"]))
    assert [event["type"] for event in received] == ["email.bounced", "suppression.created"]
    bounced, suppressed = received
    assert bounced["data"] == {
        "jobId": str(job.id),
        "recipient": "Ada@example.com",
        "provider": "POSTMARK",
        "occurredAt": bounced["data"]["occurredAt"],
    }
    assert suppressed["data"]["email"] == "ada@example.com"
    assert (suppressed["data"]["reason"], suppressed["data"]["provider"]) == ("HARD_BOUNCE", "POSTMARK")
    assert suppressed["data"]["jobId"] == str(job.id)
    assert arrivals_at(receiver, "/delivered", 1, timeout=0.5) == []


def test_a_provider_sending_an_event_again_emits_nothing_more(
    holder: Client, receiver: Receiver, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    subscribe(holder, receiver, "email.delivered", "email.opened")
    _, message_id = sent_email(holder.account, "SENDGRID")
    batch = sendgrid_events.batch([sendgrid_events.event("delivered", anymail_id=message_id)])

    assert post_events("sendgrid", holder.account, batch).status_code == 200
    assert post_events("sendgrid", holder.account, batch).status_code == 200

    assert [event["type"] for event in bodies(receiver, "/events", 1)] == ["email.delivered"]
    assert arrivals_at(receiver, "/events", 2, timeout=0.5)[1:] == []
    assert Event.objects.filter(account=holder.account).count() == 1


def test_an_email_event_carries_its_jobs_tags_and_metadata_read_by_the_queries_that_find_the_jobs(
    holder: Client, receiver: Receiver, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    subscribe(holder, receiver, "email.delivered", "email.opened")
    labels = {"tags": ["receipt"], "metadata": {"order_id": "A-17"}}
    by_id, _ = sent_email(holder.account, "SENDGRID", **labels)
    by_message, message_id = sent_email(holder.account, "SENDGRID", tags=["digest", "weekly"])
    plain, plain_message_id = sent_email(holder.account, "SENDGRID")
    batch = sendgrid_events.batch(
        [
            sendgrid_events.event("delivered", job_id=str(by_id.id)),
            sendgrid_events.event("open", anymail_id=message_id),
            sendgrid_events.event("delivered", anymail_id=plain_message_id),
        ]
    )

    with CaptureQueriesContext(connection) as queries:
        assert post_events("sendgrid", holder.account, batch).status_code == 200

    received = {event["data"]["jobId"]: event for event in bodies(receiver, "/events", 3)}
    assert received[str(by_id.id)]["type"] == "email.delivered"
    assert received[str(by_id.id)]["data"] == {
        "jobId": str(by_id.id),
        "recipient": "user@example.com",
        "provider": "SENDGRID",
        "occurredAt": received[str(by_id.id)]["data"]["occurredAt"],
        **labels,
    }
    assert received[str(by_message.id)]["type"] == "email.opened"
    assert received[str(by_message.id)]["data"]["tags"] == ["digest", "weekly"]
    assert "metadata" not in received[str(by_message.id)]["data"]
    assert set(received[str(plain.id)]["data"]) == {"jobId", "recipient", "provider", "occurredAt"}
    # One query by job id, one by message id: each reads the labels of the jobs it finds, never their payloads.
    job_reads = [query["sql"] for query in queries if 'FROM "notifications_job"' in query["sql"]]
    job_reads += [query["sql"] for query in queries if 'JOIN "notifications_job"' in query["sql"]]
    assert len(job_reads) == 2
    assert all('"labels"' in statement and '"payload"' not in statement for statement in job_reads)


def test_an_account_without_event_endpoints_reads_no_labels_to_store_events(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    job, message_id = sent_email(holder.account, "SENDGRID", tags=["receipt"])
    batch = sendgrid_events.batch([sendgrid_events.event("delivered", anymail_id=message_id)])

    with CaptureQueriesContext(connection) as queries:
        assert post_events("sendgrid", holder.account, batch).status_code == 200

    job_reads = [query["sql"] for query in queries if "notifications_job" in query["sql"]]
    assert job_reads
    assert not any('"payload"' in statement or '"labels"' in statement for statement in job_reads)
    assert Event.objects.filter(account=holder.account).count() == 0
    assert EmailEvent.objects.get().job_id == job.id


def test_an_address_suppressed_by_hand_emits_suppression_created(free: Client, receiver: Receiver) -> None:
    subscribe(free, receiver, "suppression.created")

    assert free.post("/api/v1/suppressions", {"email": "Grace@example.com"}).status_code == 201

    (event,) = bodies(receiver, "/events", 1)
    assert event["type"] == "suppression.created"
    assert (event["data"]["email"], event["data"]["reason"], event["data"]["provider"]) == (
        "grace@example.com",
        "MANUAL",
        None,
    )
    assert free.post("/api/v1/suppressions", {"email": "grace@example.com"}).status_code == 409
    assert Event.objects.filter(type=EventType.SUPPRESSION_CREATED).count() == 1


def test_a_send_to_a_suppressed_address_emits_job_failed(holder: Client, receiver: Receiver) -> None:
    ready_to_send(holder, "SENDGRID")
    assert holder.post("/api/v1/suppressions", {"email": "ada@example.com"}).status_code == 201
    subscribe(holder, receiver, "job.failed")

    response = holder.send_email(to="ada@example.com")

    assert response.json()["data"]["status"] == "failed"
    (event,) = bodies(receiver, "/events", 1)
    assert event["type"] == "job.failed"
    assert event["data"]["id"] == response.json()["data"]["jobId"]
    assert event["data"]["errorMessage"] == "Recipient is on the suppression list (MANUAL)"
    assert Job.objects.get(id=event["data"]["id"]).status == "failed"
