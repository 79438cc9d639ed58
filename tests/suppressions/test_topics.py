"""Topics (docs/suppressions.md, "Topics"): an email's `topic`, stored with it, and the list's entries for every email
and for one topic, as the send, the batch, the attempt and the providers' unsubscribe events apply them."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import sql
from notifications.engine.processing import job_process
from notifications.models import Job, JobStatus
from suppressions.models import Suppression, SuppressionReason
from tests.conftest import EMAIL, Client, ready_to_send
from tests.fakes.events import PostmarkEvents, SendGridEvents
from tests.fakes.providers import FakeSendGrid
from tests.suppressions.test_suppressed_sends import accepted
from tests.webhooks_inbound.conftest import SentEmail, post_events

EMAIL_BATCH = "/api/v1/notifications/email/batch"
TOPIC_RULE = "must be 1 to 64 of a-z, 0-9, _ and -"


def suppress(client: Client, email: str, topic: str | None = None, reason: str = "MANUAL") -> None:
    Suppression.objects.create(account=client.account, email=email, topic=topic, reason=reason)


def arrival(response: Any) -> tuple[str, str | None]:
    """The accepted job's status and error as it was stored."""
    job = Job.objects.get(id=accepted(response))
    return job.status, job.error_message


@pytest.mark.django_db
def test_a_topic_is_stored_in_the_payload_and_shown_with_the_job(free: Client) -> None:
    job_id = accepted(free.send_email(topic="weekly-digest"))

    job = Job.objects.get(id=job_id)
    assert (job.payload["topic"], job.topic) == ("weekly-digest", "weekly-digest")
    assert free.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]["payload"]["topic"] == "weekly-digest"
    plain = Job.objects.get(id=accepted(free.send_email()))
    assert ("topic" not in plain.payload, plain.topic) == (True, None)


@pytest.mark.django_db
@pytest.mark.parametrize("topic", ["Weekly", "", "a" * 65, "week ly", "digest.v1", 7, None, ["news"]])
def test_a_bad_topic_is_a_400_naming_the_field_on_a_send_and_in_a_batch_item(free: Client, topic: Any) -> None:
    single = free.send_email(topic=topic)
    batch = free.post(EMAIL_BATCH, {"items": [{**EMAIL, "topic": topic}, EMAIL]})

    assert single.status_code == 400
    assert single.json()["error"] == f"topic {TOPIC_RULE}"
    items = batch.json()["data"]["items"]
    assert items[0] == {"status": 400, "error": f"topic {TOPIC_RULE}", "code": "validation_failed"}
    assert items[1]["status"] == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("listed_topic", "sent_topic", "stopped"),
    [
        (None, "news", True),  # an entry for every email stops every email
        (None, None, True),
        ("news", "news", True),  # a topic's entry stops that topic's emails
        ("news", "digest", False),  # and no other topic's
        ("news", None, False),  # nor transactional mail
    ],
)
def test_a_send_is_stopped_by_the_entry_for_every_email_or_for_its_topic(
    free: Client, listed_topic: str | None, sent_topic: str | None, stopped: bool
) -> None:
    suppress(free, "ada@example.com", topic=listed_topic)
    fields = {"topic": sent_topic} if sent_topic else {}

    status, error = arrival(free.send_email(to="Ada@example.com", **fields))

    if stopped:
        assert (status, error) == (JobStatus.FAILED, "Recipient is on the suppression list (MANUAL)")
    else:
        assert (status, error) == (JobStatus.PENDING, None)


@pytest.mark.django_db
def test_the_entry_for_every_email_gives_the_reason_when_the_topic_has_one_too(free: Client) -> None:
    suppress(free, "ada@example.com", topic="news", reason=SuppressionReason.UNSUBSCRIBED)
    suppress(free, "ada@example.com", reason=SuppressionReason.HARD_BOUNCE)

    assert arrival(free.send_email(to="ada@example.com", topic="news")) == (
        JobStatus.FAILED,
        "Recipient is on the suppression list (HARD_BOUNCE)",
    )


@pytest.mark.django_db
def test_copies_listed_for_the_topic_are_left_out_and_others_kept(startup: Client) -> None:
    ready_to_send(startup)
    suppress(startup, "news-off@example.com", topic="news")
    suppress(startup, "digest-off@example.com", topic="digest")

    job_id = accepted(
        startup.send_email(to="ada@example.com", topic="news", cc=["news-off@example.com", "digest-off@example.com"])
    )

    skipped = Job.objects.get(id=job_id).payload["skippedRecipients"]
    assert skipped == [{"email": "news-off@example.com", "reason": "MANUAL"}]


@pytest.mark.django_db
def test_a_batch_applies_each_items_topic_in_one_read(free: Client) -> None:
    suppress(free, "ada@example.com", topic="news")
    items = [
        {**EMAIL, "to": "ada@example.com", "topic": "news"},
        {**EMAIL, "to": "ada@example.com", "topic": "digest"},
        {**EMAIL, "to": "ada@example.com"},
    ]

    with CaptureQueriesContext(connection) as queries:
        response = free.post(EMAIL_BATCH, {"items": items})

    assert len([query for query in queries if sql.table(Suppression) in query["sql"]]) == 1
    answered = response.json()["data"]["items"]
    assert [item["status"] for item in answered] == ["failed", "pending", "pending"]
    assert Job.objects.get(id=answered[0]["jobId"]).error_message == "Recipient is on the suppression list (MANUAL)"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_the_attempt_is_stopped_by_an_entry_for_its_topic_added_while_it_waited_and_not_by_another(
    holder: Client, sendgrid: FakeSendGrid
) -> None:
    ready_to_send(holder, "SENDGRID")
    on_news = accepted(holder.send_email(to="ada@example.com", topic="news"))
    on_digest = accepted(holder.send_email(to="ada@example.com", topic="digest"))
    transactional = accepted(holder.send_email(to="ada@example.com"))
    suppress(holder, "ada@example.com", topic="news", reason=SuppressionReason.UNSUBSCRIBED)

    for job_id in (on_news, on_digest, transactional):
        job_process(job_id=UUID(job_id))

    jobs = {job.id: job for job in Job.objects.filter(account=holder.account)}
    assert (jobs[UUID(on_news)].status, jobs[UUID(on_news)].error_message) == (
        JobStatus.FAILED,
        "Recipient is on the suppression list (UNSUBSCRIBED)",
    )
    assert jobs[UUID(on_digest)].status == jobs[UUID(transactional)].status == JobStatus.COMPLETED
    assert len(sendgrid.accepted) == 2


@pytest.mark.django_db
def test_a_providers_unsubscribe_takes_its_jobs_topic_and_a_bounce_every_email(
    holder: Client, sent_email: SentEmail, postmark_events: PostmarkEvents, sendgrid_events: SendGridEvents
) -> None:
    unsubscribed, message_id = sent_email(holder.account, "POSTMARK", to="ada@example.com", topic="news")
    Job.objects.filter(id=unsubscribed.id).update(topic="news")
    bounced, _ = sent_email(holder.account, "SENDGRID", to="grace@example.com", topic="news")
    Job.objects.filter(id=bounced.id).update(topic="news")
    change = postmark_events.event("SubscriptionChange", message_id=message_id, recipient="ada@example.com")
    bounce = sendgrid_events.event("bounce", job_id=str(bounced.id), email="grace@example.com", type="bounce")

    assert post_events("postmark", holder.account, postmark_events.deliver(change)).status_code == 200
    assert post_events("sendgrid", holder.account, sendgrid_events.batch([bounce])).status_code == 200

    stored = Suppression.objects.filter(account=holder.account).order_by("email")
    assert [(entry.email, entry.topic, entry.reason, entry.provider) for entry in stored] == [
        ("ada@example.com", "news", "UNSUBSCRIBED", "POSTMARK"),
        ("grace@example.com", None, "HARD_BOUNCE", "SENDGRID"),
    ]


@pytest.mark.django_db
def test_a_providers_unsubscribe_of_an_email_without_a_topic_stops_every_email(
    holder: Client, sent_email: SentEmail, sendgrid_events: SendGridEvents
) -> None:
    job, _ = sent_email(holder.account, "SENDGRID", to="ada@example.com")
    event = sendgrid_events.event("unsubscribe", job_id=str(job.id), email="ada@example.com")

    assert post_events("sendgrid", holder.account, sendgrid_events.batch([event])).status_code == 200

    assert list(Suppression.objects.values_list("email", "topic", "reason")) == [
        ("ada@example.com", None, "UNSUBSCRIBED")
    ]
