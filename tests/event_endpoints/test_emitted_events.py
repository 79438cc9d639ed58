"""What emits an event besides a job's last attempt: a provider's report about an email, an address put on the
suppression list (by a provider's event or by hand), and a send refused on arrival (docs/event-endpoints.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from event_endpoints.models import Event, EventType
from notifications.models import Job
from tests.conftest import Client, ready_to_send
from tests.event_endpoints.test_event_delivery import arrivals_at, subscribe
from tests.fakes.events import PostmarkEvents, SendGridEvents
from tests.fakes.receiver import Receiver
from tests.webhooks_inbound.conftest import SentEmail, post_events

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
