"""What the providers report as permanent stops the next email to the address at every provider; nothing else does.

The events are posted as each provider posts them (Postmark's Basic Auth, SendGrid's ECDSA signature, Resend's Svix
signature), and the emails go through the fake providers, which must hear nothing of a suppressed address.
"""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import UsagePeriod
from notifications.models import DailyTally, Job, JobStatus
from suppressions.models import Suppression
from tests.conftest import Client, ready_to_send, wait_for_job
from tests.fakes.events import Delivery, PostmarkEvents, ResendEvents, SendGridEvents
from tests.fakes.providers import FakePostmark, FakeSendGrid
from tests.webhooks_inbound.conftest import SentEmail, post_events

SUPPRESSED_BY_BOUNCE = "Recipient is on the suppression list (HARD_BOUNCE)"


def quota_used(client: Client) -> int:
    return sum(UsagePeriod.objects.filter(account=client.account).values_list("used", flat=True))


def accepted(response: Any) -> str:
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["jobId"])


@pytest.mark.usefixtures("worker")
def test_a_hard_bounce_at_postmark_stops_the_next_send_at_every_provider(
    holder: Client,
    postmark: FakePostmark,
    sendgrid: FakeSendGrid,
    postmark_events: PostmarkEvents,
    make_client: Any,
) -> None:
    ready_to_send(holder, "POSTMARK", "SENDGRID")
    first = accepted(holder.send_email(to="ada@example.com", provider="POSTMARK"))
    assert wait_for_job(first).status == "completed"
    (message,) = postmark.accepted
    bounce = postmark_events.event("Bounce", message_id=message["MessageID"], recipient="ada@example.com")
    assert post_events("postmark", holder.account, postmark_events.deliver(bounce)).status_code == 200
    used_before = quota_used(holder)

    # In another case, and routed to SendGrid: the list compares without case and holds for every provider.
    response = holder.send_email(to="ADA@example.com", provider="SENDGRID", fallback="POSTMARK")

    assert response.status_code == 202
    assert response.json()["data"]["status"] == "failed"
    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 1, SUPPRESSED_BY_BOUNCE)
    shown = holder.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]
    assert [(log["status"], log["usedProvider"], log["errorMessage"]) for log in shown["deliveryLogs"]] == [
        ("failed", None, SUPPRESSED_BY_BOUNCE)
    ]
    assert quota_used(holder) == used_before
    assert (len(postmark.accepted), len(sendgrid.accepted)) == (1, 0)
    stored = Suppression.objects.get(account=holder.account)
    assert (stored.email, stored.reason, stored.provider, str(stored.job_id)) == (
        "ada@example.com",
        "HARD_BOUNCE",
        "POSTMARK",
        first,
    )
    # Another account's list is its own: its email to the address goes out.
    other = ready_to_send(make_client("startup"), "SENDGRID")
    assert wait_for_job(accepted(other.send_email(to="ada@example.com"))).status == "completed"
    assert len(sendgrid.accepted) == 1


@pytest.mark.usefixtures("worker")
def test_removing_the_address_lets_it_receive_again(holder: Client, sendgrid: FakeSendGrid) -> None:
    ready_to_send(holder, "SENDGRID")
    assert holder.post("/api/v1/suppressions", {"email": "ada@example.com"}).status_code == 201
    refused = wait_for_job(accepted(holder.send_email(to="ada@example.com")))
    assert refused.error_message == "Recipient is on the suppression list (MANUAL)"

    assert holder.delete("/api/v1/suppressions/ada@example.com").status_code == 200
    sent = wait_for_job(accepted(holder.send_email(to="ada@example.com")))

    assert sent.status == "completed"
    assert [message["personalizations"][0]["to"][0]["email"] for message in sendgrid.accepted] == ["ada@example.com"]


@pytest.mark.django_db
def test_a_second_send_with_the_same_idempotency_key_is_a_409_even_when_suppressed(holder: Client) -> None:
    ready_to_send(holder, "SENDGRID")
    holder.post("/api/v1/suppressions", {"email": "ada@example.com"})
    body = {"to": "ada@example.com", "idempotencyKey": "signup-42"}

    assert holder.send_email(**body).status_code == 202
    again = holder.send_email(**body)

    assert again.status_code == 409
    assert again.json()["error"] == "Duplicate request detected"
    assert Job.objects.filter(account=holder.account).count() == 1
    # The job failed on arrival counts in the day's figures, once.
    assert list(DailyTally.objects.filter(account=holder.account).values_list("completed", "failed")) == [(0, 1)]


@pytest.mark.django_db
def test_webhooks_are_not_checked_against_the_list(holder: Client) -> None:
    holder.post("/api/v1/suppressions", {"email": "ada@example.com"})

    response = holder.send_webhook(url="https://ada@example.com/in")

    assert response.status_code == 202
    assert response.json()["data"]["status"] == "pending"


def postmark_bounce(events: PostmarkEvents, message_id: str, bounce_type: str) -> Delivery:
    return events.deliver(events.event("Bounce", message_id=message_id, recipient="ada@example.com", Type=bounce_type))


def postmark_record(events: PostmarkEvents, message_id: str, record_type: str) -> Delivery:
    return events.deliver(events.event(record_type, message_id=message_id, recipient="ada@example.com"))


def sendgrid_event(events: SendGridEvents, job_id: str, kind: str, **fields: Any) -> Delivery:
    return events.batch([events.event(kind, job_id=job_id, email="ada@example.com", **fields)])


def resend_event(events: ResendEvents, email_id: str, kind: str, **data: Any) -> Delivery:
    return events.deliver(events.event(kind, email_id=email_id, to="ada@example.com", **data))


# Each provider's event, as (provider, how to build it, the reason it suppresses for or None).
EVENTS: list[tuple[str, Any, str | None]] = [
    ("POSTMARK", lambda e, job, msg: postmark_bounce(e, msg, "HardBounce"), "HARD_BOUNCE"),
    ("POSTMARK", lambda e, job, msg: postmark_bounce(e, msg, "BadEmailAddress"), "HARD_BOUNCE"),
    ("POSTMARK", lambda e, job, msg: postmark_bounce(e, msg, "SoftBounce"), None),
    ("POSTMARK", lambda e, job, msg: postmark_bounce(e, msg, "Transient"), None),
    ("POSTMARK", lambda e, job, msg: postmark_bounce(e, msg, "AutoResponder"), None),
    ("POSTMARK", lambda e, job, msg: postmark_record(e, msg, "SpamComplaint"), "SPAM_REPORT"),
    ("POSTMARK", lambda e, job, msg: postmark_record(e, msg, "SubscriptionChange"), "UNSUBSCRIBED"),
    ("POSTMARK", lambda e, job, msg: postmark_record(e, msg, "Delivery"), None),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "bounce", type="bounce"), "HARD_BOUNCE"),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "bounce", type="blocked"), None),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "dropped", reason="Bounced Address"), None),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "deferred"), None),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "spamreport"), "SPAM_REPORT"),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "unsubscribe"), "UNSUBSCRIBED"),
    ("SENDGRID", lambda e, job, msg: sendgrid_event(e, job, "group_unsubscribe"), "UNSUBSCRIBED"),
    ("RESEND", lambda e, job, msg: resend_event(e, msg, "email.bounced", bounce={"type": "Permanent"}), "HARD_BOUNCE"),
    ("RESEND", lambda e, job, msg: resend_event(e, msg, "email.bounced", bounce={"type": "Transient"}), None),
    ("RESEND", lambda e, job, msg: resend_event(e, msg, "email.bounced", bounce={"type": "Undetermined"}), None),
    ("RESEND", lambda e, job, msg: resend_event(e, msg, "email.complained"), "SPAM_REPORT"),
    ("RESEND", lambda e, job, msg: resend_event(e, msg, "email.delivery_delayed"), None),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("provider", "build", "reason"), EVENTS)
def test_only_what_a_provider_calls_permanent_suppresses_the_recipient(
    holder: Client,
    sent_email: SentEmail,
    postmark_events: PostmarkEvents,
    sendgrid_events: SendGridEvents,
    resend_events: ResendEvents,
    provider: str,
    build: Any,
    reason: str | None,
) -> None:
    job, message_id = sent_email(holder.account, provider=provider)
    events = {"POSTMARK": postmark_events, "SENDGRID": sendgrid_events, "RESEND": resend_events}[provider]

    response = post_events(provider.lower(), holder.account, build(events, str(job.id), message_id))

    assert response.status_code == 200, response.json()
    assert response.json()["data"]["stored"] == 1
    stored = list(
        Suppression.objects.filter(account=holder.account).values_list("email", "reason", "provider", "job_id")
    )
    assert stored == ([("ada@example.com", reason, provider, job.id)] if reason else [])


@pytest.mark.django_db
def test_an_event_sent_again_after_the_address_was_removed_does_not_add_it_back(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    job, _ = sent_email(holder.account, provider="SENDGRID")
    bounce = sendgrid_events.batch([sendgrid_events.event("bounce", job_id=str(job.id), email="ada@example.com")])
    assert post_events("sendgrid", holder.account, bounce).status_code == 200
    assert holder.delete("/api/v1/suppressions/ada@example.com").status_code == 200

    # SendGrid retries a batch it thinks failed: the same events, already stored once.
    again = post_events("sendgrid", holder.account, bounce)

    assert again.json()["data"]["duplicates"] == 1
    assert not Suppression.objects.filter(account=holder.account).exists()


@pytest.mark.django_db
def test_a_bounce_for_an_address_on_the_list_keeps_its_first_reason(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    holder.post("/api/v1/suppressions", {"email": "Ada@example.com"})
    job, _ = sent_email(holder.account, provider="SENDGRID")

    response = post_events("sendgrid", holder.account, sendgrid_event(sendgrid_events, str(job.id), "bounce"))

    assert response.status_code == 200
    assert list(Suppression.objects.values_list("email", "reason")) == [("ada@example.com", "MANUAL")]
