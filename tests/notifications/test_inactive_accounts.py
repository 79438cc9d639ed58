"""A deleted or deactivated account's queued and waiting jobs fail at their next claim with nothing sent; once staff
restore the account, Retry Job sends them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from django.utils import timezone

from accounts.models import Account
from accounts.services import account_delete, account_restore
from notifications.engine.processing import job_process
from notifications.models import Job, JobStatus
from tests.conftest import Client, ready_to_send
from tests.fakes.providers import FakeSendGrid
from tests.fakes.receiver import Receiver, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("delivery_settings")]

INACTIVE = "Account is inactive"


def soft_delete(account: Account) -> None:
    account_delete(account=account)


def deactivate(account: Account) -> None:
    Account.objects.filter(pk=account.pk).update(is_active=False)


ACCOUNT_STOPS: dict[str, Callable[[Account], None]] = {"soft-deleted": soft_delete, "deactivated": deactivate}


def accepted(response: Any) -> str:
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["jobId"])


def claim_and_attempt(job_id: str) -> Job:
    """What a worker does with the job's task: claim it, attempt it, record the attempt."""
    job_process(job_id=UUID(job_id))
    return Job.objects.get(id=job_id)


def logs_of(job: Job) -> list[tuple[int, str, str | None, str | None, int | None]]:
    logs = job.delivery_logs.order_by("created_at")
    return [(log.attempt, log.status, log.error_message, log.used_provider, log.response_status) for log in logs]


@pytest.mark.parametrize("stop", ACCOUNT_STOPS.values(), ids=ACCOUNT_STOPS.keys())
def test_a_queued_webhook_of_an_inactive_account_fails_without_a_request(
    free: Client, receiver: Receiver, stop: Callable[[Account], None]
) -> None:
    job_id = accepted(free.send_webhook(url=receiver.url()))
    stop(free.account)

    job = claim_and_attempt(job_id)

    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 1, INACTIVE)
    assert job.finished_at is not None
    assert logs_of(job) == [(1, "failed", INACTIVE, None, None)]
    assert receiver.arrivals == []


def test_a_webhook_waiting_for_its_retry_fails_at_its_next_claim_once_the_account_is_deleted(
    free: Client, receiver: Receiver
) -> None:
    receiver.script("/hook", Reply(status=503))
    job_id = accepted(free.send_webhook(url=receiver.url("/hook")))
    assert claim_and_attempt(job_id).status == JobStatus.PROCESSING
    account_delete(account=free.account)
    Job.objects.filter(id=job_id).update(locked_until=timezone.now())  # the retry is due

    job = claim_and_attempt(job_id)

    assert (job.status, job.attempts, job.error_message, job.next_attempt_at) == (JobStatus.FAILED, 2, INACTIVE, None)
    assert logs_of(job) == [(1, "failed", "503 Service Unavailable", None, 503), (2, "failed", INACTIVE, None, None)]
    assert len(receiver.arrivals) == 1


@pytest.mark.parametrize("stop", ACCOUNT_STOPS.values(), ids=ACCOUNT_STOPS.keys())
def test_a_queued_email_of_an_inactive_account_fails_without_a_provider_call(
    startup: Client, sendgrid: FakeSendGrid, stop: Callable[[Account], None]
) -> None:
    ready_to_send(startup, "SENDGRID")
    job_id = accepted(startup.send_email())
    stop(startup.account)

    job = claim_and_attempt(job_id)

    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 1, INACTIVE)
    assert logs_of(job) == [(1, "failed", INACTIVE, None, None)]
    assert sendgrid.calls == []


def test_once_the_account_is_restored_retry_job_delivers_the_webhook(free: Client, receiver: Receiver) -> None:
    job_id = accepted(free.send_webhook(url=receiver.url("/hook")))
    account_delete(account=free.account)
    claim_and_attempt(job_id)
    account_restore(account=free.account)

    response = free.post(f"/api/v1/notifications/jobs/{job_id}/retry")
    job = claim_and_attempt(job_id)

    assert response.status_code == 200
    assert (job.status, job.attempts, job.error_message) == (JobStatus.COMPLETED, 1, None)
    assert [(attempt, status) for attempt, status, *_ in logs_of(job)] == [(1, "failed"), (1, "success")]
    assert [arrival.path for arrival in receiver.wait_for(1)] == ["/hook"]


def test_once_the_account_is_restored_retry_job_delivers_the_email(startup: Client, sendgrid: FakeSendGrid) -> None:
    ready_to_send(startup, "SENDGRID")
    job_id = accepted(startup.send_email())
    account_delete(account=startup.account)
    claim_and_attempt(job_id)
    account_restore(account=startup.account)

    response = startup.post(f"/api/v1/notifications/jobs/{job_id}/retry")
    job = claim_and_attempt(job_id)

    assert response.status_code == 200
    assert (job.status, job.attempts, job.error_message) == (JobStatus.COMPLETED, 1, None)
    (sent,) = sendgrid.sent
    assert sent.json["custom_args"]["job_id"] == job_id
