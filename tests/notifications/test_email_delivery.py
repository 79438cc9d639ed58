"""Email delivery end to end: API → broker → worker → fake provider servers."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from accounts.services import provider_key_set
from notifications.engine.queue import job_enqueue
from notifications.models import JobStatus
from tests.conftest import Client, ready_to_send, wait_for_job
from tests.factories import JobFactory
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid
from tests.providers_fixtures import POSTMARK_KEY, SENDGRID_KEY

pytestmark = pytest.mark.usefixtures("worker")

NO_PROVIDER_MESSAGE = (
    "Please add at least one email provider API key (SendGrid, Resend, or Postmark) in Settings before sending emails."
)


def send(client: Client, **fields: Any) -> str:
    response = client.send_email(**fields)
    assert response.status_code == 202, response.json()
    return response.json()["data"]["jobId"]


def logs_of(job_id: str, client: Client) -> list[tuple[int, str, str | None, str | None]]:
    data = client.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]
    return [(log["attempt"], log["status"], log["usedProvider"], log["errorMessage"]) for log in data["deliveryLogs"]]


def test_a_paid_email_goes_through_the_first_provider(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND")

    job_id = send(startup, **{"from": "billing@example.com"})
    job = wait_for_job(job_id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 1)
    assert logs_of(job_id, startup) == [(1, "success", "SENDGRID", None)]
    (call,) = sendgrid.sent
    assert call.headers["Authorization"] == f"Bearer {SENDGRID_KEY}"
    assert call.json["from"]["email"] == "billing@em.example.com"
    assert call.json["personalizations"][0]["to"] == [{"email": "user@example.com"}]
    assert call.json["subject"] == "Welcome"
    assert call.json["custom_args"]["job_id"] == job_id
    assert resend.sent == []
    # SendGrid's events name the message by an sg_message_id that begins with this (webhooks_inbound).
    assert job.delivery_logs.get().provider_message_id == sendgrid.accepted[0]["X-Message-Id"]


def test_the_sender_defaults_to_noreply_at_the_em_subdomain(startup: Client, resend: FakeResend) -> None:
    ready_to_send(startup, "RESEND")

    wait_for_job(send(startup))

    assert resend.sent[0].json["from"] == "noreply@em.example.com"


def test_a_failing_provider_hands_over_within_one_attempt(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND")
    sendgrid.fail(500)

    job_id = send(startup)
    job = wait_for_job(job_id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 1)
    assert logs_of(job_id, startup) == [(1, "success", "RESEND", None)]
    assert len(resend.sent) == 1


def test_an_attempt_fails_only_when_every_provider_failed_then_it_retries(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND")
    sendgrid.fail(503)
    resend.fail(500)

    job_id = send(startup)
    job = wait_for_job(job_id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 2)
    (first, second) = logs_of(job_id, startup)
    assert first[:3] == (1, "failed", "RESEND")
    assert first[3].startswith("SENDGRID: 503 ")
    assert "; RESEND: 500 " in first[3]
    assert second == (2, "success", "SENDGRID", None)


def test_three_failed_attempts_fail_the_job(startup: Client, sendgrid: FakeSendGrid) -> None:
    ready_to_send(startup, "SENDGRID")
    sendgrid.fail(500, times=3)

    job = wait_for_job(send(startup))

    assert (job.status, job.attempts) == (JobStatus.FAILED, 3)
    assert job.error_message.startswith("SENDGRID: 500 ")
    assert len(sendgrid.calls) == 3


def test_a_wrong_key_names_the_provider_and_its_reason(startup: Client, sendgrid: FakeSendGrid) -> None:
    ready_to_send(startup, "SENDGRID")
    provider_key_set(account=startup.account, provider="SENDGRID", api_key="revoked-key")

    job = wait_for_job(send(startup, provider="SENDGRID"))

    assert job.status == JobStatus.FAILED
    assert job.error_message.startswith("SENDGRID: 401 ")
    assert sendgrid.sent == []


def test_a_slow_provider_times_out_and_the_next_one_delivers(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend, delivery_settings: Any
) -> None:
    delivery_settings.PROVIDER_TIMEOUT_SECONDS = 1
    ready_to_send(startup, "RESEND", "SENDGRID")
    resend.hang(3)

    job_id = send(startup)
    job = wait_for_job(job_id)

    assert job.status == JobStatus.COMPLETED
    assert logs_of(job_id, startup) == [(1, "success", "SENDGRID", None)]


def test_a_forced_provider_alone_is_tried_once_without_retry(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND")
    resend.fail(500)

    job_id = send(startup, provider="RESEND")
    job = wait_for_job(job_id)

    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    assert logs_of(job_id, startup)[0][:3] == (1, "failed", "RESEND")
    assert sendgrid.calls == []


def test_a_forced_provider_hands_over_to_its_fallback_only(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend, postmark: FakePostmark
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND", "POSTMARK")
    postmark.fail(500)

    job_id = send(startup, provider="POSTMARK", fallback="RESEND")
    job = wait_for_job(job_id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 1)
    assert logs_of(job_id, startup) == [(1, "success", "RESEND", None)]
    assert sendgrid.calls == []


def test_forced_provider_and_fallback_both_failing_fail_the_job_at_once(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend, postmark: FakePostmark
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND", "POSTMARK")
    postmark.fail(500)
    resend.fail(503)

    job_id = send(startup, provider="POSTMARK", fallback="RESEND")
    job = wait_for_job(job_id)

    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    attempt, status, used, error = logs_of(job_id, startup)[0]
    assert (attempt, status, used) == (1, "failed", "RESEND")
    assert error.startswith("POSTMARK: 500 ")
    assert "RESEND: 503 " in error
    assert sendgrid.calls == []

    response = startup.post(f"/api/v1/notifications/jobs/{job_id}/retry")
    job = wait_for_job(job_id, "completed")

    assert response.status_code == 200
    assert logs_of(job_id, startup)[-1] == (1, "success", "POSTMARK", None)
    assert sendgrid.calls == []


def test_postmark_gets_the_server_token_and_the_job_id_as_metadata(startup: Client, postmark: FakePostmark) -> None:
    ready_to_send(startup, "POSTMARK")

    job_id = send(startup)
    wait_for_job(job_id)

    (call,) = postmark.sent
    assert call.headers["X-Postmark-Server-Token"] == POSTMARK_KEY
    assert call.json["Metadata"] == {"job_id": job_id}
    assert call.json["From"] == "noreply@em.example.com"


def test_a_free_email_uses_the_platform_providers_and_names_none(
    free: Client, postmark: FakePostmark, sendgrid: FakeSendGrid, delivery_settings: Any
) -> None:
    delivery_settings.PLATFORM_PROVIDERS = ["POSTMARK", "SENDGRID"]
    delivery_settings.PLATFORM_PROVIDER_KEYS = {"POSTMARK": POSTMARK_KEY, "SENDGRID": SENDGRID_KEY}
    postmark.fail(500)

    job_id = send(free)
    job = wait_for_job(job_id)

    assert job.status == JobStatus.COMPLETED
    assert logs_of(job_id, free) == [(1, "success", None, None)]
    assert sendgrid.sent[0].json["from"]["email"] == "noreply@notifyhub.local"


def test_a_free_email_without_platform_providers_goes_to_djangos_backend(free: Client, delivery_settings: Any) -> None:
    delivery_settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []

    job_id = send(free, body="<p>Hi <b>you</b></p>")
    job = wait_for_job(job_id)

    assert job.status == JobStatus.COMPLETED
    assert logs_of(job_id, free) == [(1, "success", None, None)]
    (message,) = mail.outbox
    assert (message.from_email, message.to, message.subject) == (
        "noreply@notifyhub.local",
        ["user@example.com"],
        "Welcome",
    )
    assert message.body == "Hi you"
    assert message.alternatives[0][0] == "<p>Hi <b>you</b></p>"


def test_a_key_removed_after_acceptance_fails_the_job_with_a_clear_message(
    startup: Client, sendgrid: FakeSendGrid
) -> None:
    ready_to_send(startup, "SENDGRID")
    job = JobFactory(
        account=startup.account, type="email", payload={"to": "u@example.com", "subject": "s", "body": "b"}
    )
    startup.account.provider_keys.all().delete()

    job_enqueue(job_id=job.id, priority=job.priority)
    job = wait_for_job(job.id)

    assert (job.status, job.attempts, job.error_message) == (
        JobStatus.FAILED,
        1,
        NO_PROVIDER_MESSAGE,
    )
    assert sendgrid.calls == []
