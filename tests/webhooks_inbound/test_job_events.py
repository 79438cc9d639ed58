"""Stored events as API clients read them: ``events`` on Get Job Status, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Client, ready_to_send, wait_for_job
from tests.fakes.events import PostmarkEvents, ResendEvents, SendGridEvents
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid
from tests.webhooks_inbound.conftest import SentEmail, post_events, receiver_path

AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def test_get_job_status_lists_the_events_oldest_first(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents, sendgrid_events: SendGridEvents
) -> None:
    job, message_id = sent_email(holder.account)
    # Providers report out of order; the list is by when each event happened.
    opened = postmark_events.event(
        "Open", message_id=message_id, recipient="ada@example.com", at=AT + timedelta(hours=1)
    )
    delivered = postmark_events.event("Delivery", message_id=message_id, recipient="ada@example.com", at=AT)
    for event in (opened, delivered):
        assert post_events("postmark", holder.account, postmark_events.deliver(event)).status_code == 200
    clicked = sendgrid_events.event("click", job_id=str(job.id), timestamp=int((AT + timedelta(hours=2)).timestamp()))
    assert post_events("sendgrid", holder.account, sendgrid_events.batch([clicked])).status_code == 200

    data = holder.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]

    assert data["events"] == [
        {
            "type": "DELIVERED",
            "provider": "POSTMARK",
            "occurredAt": "2026-11-20T09:00:00.000Z",
            "recipient": "ada@example.com",
        },
        {
            "type": "OPENED",
            "provider": "POSTMARK",
            "occurredAt": "2026-11-20T10:00:00.000Z",
            "recipient": "ada@example.com",
        },
        {
            "type": "CLICKED",
            "provider": "SENDGRID",
            "occurredAt": "2026-11-20T11:00:00.000Z",
            "recipient": "user@example.com",
        },
    ]
    assert data["deliveryLogs"][0]["usedProvider"] == "POSTMARK"


def test_a_job_without_events_has_an_empty_list_and_the_job_list_has_none(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    job, message_id = sent_email(holder.account)
    quiet_job, _ = sent_email(holder.account)
    post_events(
        "postmark", holder.account, postmark_events.deliver(postmark_events.event("Delivery", message_id=message_id))
    )

    assert holder.get(f"/api/v1/notifications/jobs/{quiet_job.id}").json()["data"]["events"] == []
    listed = holder.get("/api/v1/notifications/jobs").json()["data"]["data"]
    assert {str(job.id), str(quiet_job.id)} == {entry["id"] for entry in listed}
    assert all("events" not in entry for entry in listed)


def test_another_accounts_job_status_never_shows_these_events(
    holder: Client, make_client: Any, sent_email: SentEmail, postmark_events: PostmarkEvents
) -> None:
    job, message_id = sent_email(holder.account)
    post_events(
        "postmark", holder.account, postmark_events.deliver(postmark_events.event("Delivery", message_id=message_id))
    )
    other = make_client("startup")

    assert other.get(f"/api/v1/notifications/jobs/{job.id}").status_code == 404
    assert len(holder.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]["events"]) == 1


@pytest.mark.usefixtures("worker")
def test_sendgrid_and_resend_events_for_emails_they_sent_reach_get_job_status(
    holder: Client,
    sendgrid: FakeSendGrid,
    resend: FakeResend,
    sendgrid_events: SendGridEvents,
    resend_events: ResendEvents,
    live_server: Any,
) -> None:
    ready_to_send(holder, "SENDGRID", "RESEND")
    by_sendgrid = holder.send_email(provider="SENDGRID").json()["data"]["jobId"]
    by_resend = holder.send_email(provider="RESEND").json()["data"]["jobId"]
    assert [wait_for_job(job_id).status for job_id in (by_sendgrid, by_resend)] == ["completed", "completed"]
    # Each provider names the message its own way: SendGrid by an sg_message_id that begins with
    # the X-Message-Id of the send (custom args left out here), Resend by the id it answered with.
    (sendgrid_message,) = sendgrid.accepted
    (resend_message,) = resend.accepted
    sg_message_id = sendgrid_message["X-Message-Id"] + ".filterdrecv-5bd4c-1-64B7-9.0"
    deliveries = {
        "sendgrid": sendgrid_events.batch(
            [sendgrid_events.event("delivered", sg_message_id=sg_message_id, timestamp=int(AT.timestamp()))]
        ),
        "resend": resend_events.deliver(resend_events.event("email.opened", email_id=resend_message["id"], at=AT)),
    }

    for slug, delivery in deliveries.items():
        response = delivery.post(live_server.url + receiver_path(slug, holder.account))
        assert (response.status_code, response.json()["data"]["stored"]) == (200, 1)

    events = {
        job_id: holder.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]["events"]
        for job_id in (by_sendgrid, by_resend)
    }
    assert events == {
        by_sendgrid: [
            {
                "type": "DELIVERED",
                "provider": "SENDGRID",
                "occurredAt": "2026-11-20T09:00:00.000Z",
                "recipient": "user@example.com",
            }
        ],
        by_resend: [
            {
                "type": "OPENED",
                "provider": "RESEND",
                "occurredAt": "2026-11-20T09:00:00.000Z",
                "recipient": "user@example.com",
            }
        ],
    }


@pytest.mark.usefixtures("worker")
def test_a_postmark_event_for_an_email_sent_through_postmark_reaches_get_job_status(
    holder: Client, postmark: FakePostmark, postmark_events: PostmarkEvents, live_server: Any
) -> None:
    ready_to_send(holder, "POSTMARK")
    job_id = holder.send_email(to="ada@example.com").json()["data"]["jobId"]
    assert wait_for_job(job_id).status == "completed"
    # Postmark reports on the message it accepted, as its webhook would: over HTTP, naming its MessageID.
    (message,) = postmark.accepted
    assert message["Metadata"] == {"job_id": job_id}
    delivered = postmark_events.event("Delivery", message_id=message["MessageID"], recipient=message["To"], at=AT)

    response = postmark_events.deliver(delivered).post(live_server.url + receiver_path("postmark", holder.account))

    assert response.status_code == 200, response.text
    assert response.json()["data"]["stored"] == 1
    events = holder.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]["events"]
    assert events == [
        {
            "type": "DELIVERED",
            "provider": "POSTMARK",
            "occurredAt": "2026-11-20T09:00:00.000Z",
            "recipient": "ada@example.com",
        }
    ]
