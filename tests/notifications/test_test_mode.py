"""Test mode: a test key's sends run every rule, send nothing, spend no quota, and only test keys see them
(docs/rules.md, "Test mode")."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from accounts.models import KeyMode, KeyScope
from accounts.selectors import usage_get
from accounts.services import api_key_create
from core.errors import JobNotCancellable, JobNotRetryable, QuotaExceeded
from event_endpoints.models import Event, EventDelivery
from event_endpoints.services import endpoint_create
from notifications.delivery.outcome import TEST_MODE_EXCERPT
from notifications.engine.processing import jobs_dispatch
from notifications.models import DailyTally, DeliveryLog, DestinationHealth, Job, JobAnnouncement, JobStatus
from suppressions.models import Suppression
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import EMAIL, WEBHOOK, Client, ready_to_send, wait_for_job
from tests.fakes.providers import FakeResend, FakeSendGrid
from tests.fakes.receiver import Receiver
from tests.notifications.test_email_delivery import NO_PROVIDER_MESSAGE

JOBS = "/api/v1/notifications/jobs"


def with_test_key(client: Client, *, scope: str = KeyScope.FULL) -> Client:
    """The same account, through a test key of its own."""
    raw_key = api_key_create(account=client.account, name="Laptop", scope=scope, mode=KeyMode.TEST)
    return replace(client, api_key=raw_key, http=APIClient())


def accepted(response: Any) -> dict[str, Any]:
    assert response.status_code == 202, response.json()
    data: dict[str, Any] = response.json()["data"]
    return data


def listed(client: Client, **params: Any) -> list[str]:
    response = client.get(JOBS, **params)
    assert response.status_code == 200, response.json()
    return [job["id"] for job in response.json()["data"]["data"]]


@pytest.mark.usefixtures("worker")
def test_a_test_webhook_completes_at_once_with_a_success_log_and_no_request_reaches_the_url(
    free: Client, receiver: Receiver
) -> None:
    tester = with_test_key(free)
    started = time.monotonic()

    answer = accepted(tester.send_webhook(url=receiver.url("/hook")))
    job = wait_for_job(answer["jobId"])

    assert time.monotonic() - started < 1.0
    assert answer["test"] is True
    assert (job.status, job.attempts, job.test) == (JobStatus.COMPLETED, 1, True)
    log = DeliveryLog.objects.get(job=job)
    assert (log.status, log.response_status, log.response_excerpt) == ("success", None, TEST_MODE_EXCERPT)
    shown = tester.get(f"{JOBS}/{job.id}").json()["data"]
    assert (shown["status"], shown["test"], len(shown["deliveryLogs"])) == ("completed", True, 1)
    assert shown["deliveryLogs"][0]["status"] == "success"
    time.sleep(0.3)  # time for a request that should not be made
    assert receiver.arrivals == []
    assert usage_get(account=free.account).used == 0
    assert not DailyTally.objects.filter(account=free.account).exists()
    assert not DestinationHealth.objects.filter(account=free.account).exists()


@pytest.mark.usefixtures("worker")
def test_a_test_email_walks_its_route_and_no_provider_hears_of_it(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND")
    tester = with_test_key(startup)

    job_id = accepted(tester.send_email(**{"from": "billing@example.com"}))["jobId"]
    job = wait_for_job(job_id)

    assert job.status == JobStatus.COMPLETED
    shown = tester.get(f"{JOBS}/{job_id}").json()["data"]
    assert [(log["status"], log["usedProvider"]) for log in shown["deliveryLogs"]] == [("success", "SENDGRID")]
    assert (sendgrid.sent, resend.sent) == ([], [])
    assert usage_get(account=startup.account).used == 0


@pytest.mark.usefixtures("worker")
def test_a_free_test_email_reaches_no_email_backend(free: Client, delivery_settings: Any) -> None:
    delivery_settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []

    job = wait_for_job(accepted(with_test_key(free).send_email())["jobId"])

    assert job.status == JobStatus.COMPLETED
    assert mail.outbox == []


@pytest.mark.usefixtures("worker")
def test_a_test_email_to_a_paid_account_without_a_key_fails_at_its_attempt_as_a_live_one_would(
    startup: Client, sendgrid: FakeSendGrid
) -> None:
    ready_to_send(startup, "SENDGRID")
    tester = with_test_key(startup)
    job_id = accepted(tester.send_email(sendAt=(timezone.now() + timedelta(seconds=1)).isoformat()))["jobId"]
    startup.account.provider_keys.all().delete()
    time.sleep(1.1)
    jobs_dispatch()  # beat's tick, as the scheduled send's time comes

    job = wait_for_job(job_id)

    assert job.status == JobStatus.FAILED
    assert job.error_message == NO_PROVIDER_MESSAGE
    assert sendgrid.sent == []


@pytest.mark.parametrize(
    ("send", "status", "message"),
    [
        (lambda client: client.send_email(priority=1), 403, "Priority requires a paid plan"),
        (lambda client: client.send_email(to="not-an-address"), 400, "to must be an email"),
        (
            lambda client: client.send_webhook(url="https://127.0.0.1/hook"),
            400,
            "url must not point to a local or private network address",
        ),
    ],
)
def test_a_test_key_meets_every_rule_a_live_key_does(free: Client, send: Any, status: int, message: str) -> None:
    assert_error(send(free), status, message)
    assert_error(send(with_test_key(free)), status, message)
    assert not Job.objects.filter(account=free.account).exists()


def test_a_test_key_spends_no_quota_even_when_the_live_quota_is_spent(make_client: Any) -> None:
    client = make_client(monthly_limit=1)
    tester = with_test_key(client)
    assert client.send_webhook().status_code == 202

    assert client.send_webhook().json()["code"] == QuotaExceeded.code
    assert accepted(tester.send_webhook())["test"] is True
    assert usage_get(account=client.account).used == 1


def test_live_and_test_lists_never_mix_and_each_mode_is_404_to_the_other(startup: Client) -> None:
    tester = with_test_key(startup)
    live_id = accepted(startup.send_webhook())["jobId"]
    test_id = accepted(tester.send_webhook())["jobId"]

    assert listed(startup) == [live_id]
    assert listed(tester) == [test_id]
    assert listed(tester, type="webhook", status="pending", host="hooks.example.com") == [test_id]
    assert "test" not in startup.get(f"{JOBS}/{live_id}").json()["data"]
    assert "test" not in startup.get(JOBS).json()["data"]["data"][0]
    assert tester.get(JOBS).json()["data"]["data"][0]["test"] is True
    assert_error(startup.get(f"{JOBS}/{test_id}"), 404, "Job not found")
    assert_error(tester.get(f"{JOBS}/{live_id}"), 404, "Job not found")
    assert_error(startup.post(f"{JOBS}/{test_id}/cancel"), 404, JobNotCancellable.message)
    assert_error(tester.post(f"{JOBS}/{live_id}/cancel"), 404, JobNotCancellable.message)
    assert Job.objects.get(id=live_id).status == Job.objects.get(id=test_id).status == JobStatus.PENDING


def test_a_test_key_cancels_and_retries_its_own_jobs_uncounted_and_unannounced(free: Client) -> None:
    endpoint_create(account=free.account, url="https://hooks.example.com/events", events=["job.failed"])
    tester = with_test_key(free)
    test_id = accepted(tester.send_webhook())["jobId"]

    assert tester.post(f"{JOBS}/{test_id}/cancel").status_code == 200
    assert not JobAnnouncement.objects.exists()
    assert_error(free.post(f"{JOBS}/{test_id}/retry"), 404, JobNotRetryable.message)
    assert tester.post(f"{JOBS}/{test_id}/retry").json()["data"]["status"] == "pending"
    assert not DailyTally.objects.filter(account=free.account).exists()


def test_the_signed_in_holder_sees_live_jobs_only(startup: Client) -> None:
    tester = with_test_key(startup)
    live_id = accepted(startup.send_webhook())["jobId"]
    test_id = accepted(tester.send_webhook())["jobId"]
    startup.http.force_login(startup.account.user)

    page = startup.http.get("/dashboard/jobs/").content.decode()

    assert live_id in page
    assert test_id not in page
    assert startup.http.get(f"/dashboard/jobs/{test_id}/").status_code == 404


def test_an_idempotency_key_is_the_callers_within_its_mode(free: Client) -> None:
    tester = with_test_key(free)

    assert free.send_webhook(idempotencyKey="order-1").status_code == 202
    assert tester.send_webhook(idempotencyKey="order-1").status_code == 202
    assert_error(tester.send_webhook(idempotencyKey="order-1"), 409, "Duplicate request detected")
    assert_error(free.send_webhook(idempotencyKey="order-1"), 409, "Duplicate request detected")
    assert sorted(Job.objects.filter(account=free.account).values_list("test", flat=True)) == [False, True]


def test_a_test_batch_stores_test_jobs_spends_nothing_and_checks_keys_within_its_mode(free: Client) -> None:
    tester = with_test_key(free)
    assert free.send_webhook(idempotencyKey="k-1").status_code == 202
    items = [{**WEBHOOK, "idempotencyKey": "k-1"}, {**WEBHOOK, "idempotencyKey": "k-1"}, EMAIL]

    answered = accepted(tester.post("/api/v1/notifications/webhook/batch", {"items": items[:2]}))["items"]

    assert answered[0]["test"] is True
    assert answered[1] == {"status": 409, "error": "Duplicate request detected", "code": "duplicate_request"}
    assert Job.objects.get(id=answered[0]["jobId"]).test is True
    assert usage_get(account=free.account).used == 1


def test_a_test_email_to_a_suppressed_address_fails_on_arrival_uncounted_and_unannounced(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    Suppression.objects.create(account=free.account, email=EMAIL["to"], reason="bounce")
    endpoint = {"url": receiver.url("/events"), "events": ["job.failed"]}
    assert free.post("/api/v1/event-endpoints", endpoint).status_code == 201
    free.account.refresh_from_db()

    job = Job.objects.get(id=accepted(with_test_key(free).send_email())["jobId"])

    assert (job.status, job.test) == (JobStatus.FAILED, True)
    assert not JobAnnouncement.objects.exists()
    assert not DailyTally.objects.filter(account=free.account).exists()


@pytest.mark.usefixtures("worker")
def test_a_finished_test_job_is_announced_to_no_event_endpoint(free: Client, receiver: Receiver) -> None:
    endpoint = {"url": receiver.url("/events"), "events": ["job.completed", "job.failed"]}
    assert free.post("/api/v1/event-endpoints", endpoint).status_code == 201

    job = wait_for_job(accepted(with_test_key(free).send_webhook(url=receiver.url("/hook")))["jobId"])

    assert job.status == JobStatus.COMPLETED
    time.sleep(0.5)  # time for an announcement that should not be made
    assert not JobAnnouncement.objects.exists()
    assert not Event.objects.exists()
    assert not EventDelivery.objects.exists()
    assert receiver.arrivals == []
