"""Cancel Job: a pending job fails as `Cancelled` before any attempt, can be retried, and a cancel racing a worker's
claim has one winner (docs/job-states.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from event_endpoints.models import Event
from notifications.engine.processing import job_claim
from notifications.engine.store import utc_day
from notifications.models import DailyTally, Job, JobAnnouncement, JobStatus
from notifications.outcomes import finished_jobs_announce
from tests.api.test_envelope import assert_error
from tests.conftest import Client, wait_for_job
from tests.event_endpoints.test_event_delivery import subscribe
from tests.factories import JobFactory
from tests.fakes.receiver import Receiver
from tests.notifications.test_engine import lost_job

JOBS = "/api/v1/notifications/jobs"
NOT_CANCELLABLE = "Job not found or cannot be cancelled (must be pending)"


def test_a_pending_job_is_cancelled(free: Client) -> None:
    job_id = free.send_webhook().json()["data"]["jobId"]

    response = free.post(f"{JOBS}/{job_id}/cancel")

    assert response.status_code == 200
    assert response.json()["data"] == {"jobId": job_id, "status": "failed", "message": "Job has been cancelled"}
    job = Job.objects.get(id=job_id)
    assert (job.status, job.error_message, job.attempts, job.requeue_at) == ("failed", "Cancelled", 0, None)
    assert job.finished_at is not None
    assert not job.delivery_logs.exists()  # no attempt was made
    tally = DailyTally.objects.get(account=free.account, day=utc_day(job.finished_at))
    assert (tally.completed, tally.failed) == (0, 1)
    shown = free.get(f"{JOBS}/{job_id}").json()["data"]
    assert (shown["status"], shown["errorMessage"], shown["attempts"], shown["deliveryLogs"]) == (
        "failed",
        "Cancelled",
        0,
        [],
    )
    assert job_claim(job_id=job.id) is None  # its task, when a worker takes it, claims nothing


@pytest.mark.parametrize("status", [JobStatus.PROCESSING, JobStatus.COMPLETED, JobStatus.FAILED])
def test_only_a_pending_job_can_be_cancelled(free: Client, status: str) -> None:
    job = JobFactory(account=free.account, status=status)

    assert_error(free.post(f"{JOBS}/{job.id}/cancel"), 404, NOT_CANCELLABLE)
    assert Job.objects.get(id=job.id).status == status


@pytest.mark.parametrize("job_id", ["nope", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_job_cannot_be_cancelled(free: Client, job_id: str) -> None:
    response = free.post(f"{JOBS}/{job_id}/cancel")

    assert_error(response, 404, NOT_CANCELLABLE)
    assert response.json()["code"] == "job_not_cancellable"


def test_another_accounts_job_cannot_be_cancelled(free: Client, make_client: Callable[..., Client]) -> None:
    job = JobFactory(account=free.account, status=JobStatus.PENDING)

    assert_error(make_client().post(f"{JOBS}/{job.id}/cancel"), 404, NOT_CANCELLABLE)
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING


def test_the_holder_cancels_through_the_user_mount(free: Client) -> None:
    job = JobFactory(account=free.account, status=JobStatus.PENDING)

    response = free.post(f"/api/v1/user/jobs/{job.id}/cancel")

    assert response.status_code == 200
    assert Job.objects.get(id=job.id).error_message == "Cancelled"


@pytest.mark.usefixtures("worker")
def test_a_cancelled_job_is_retried_and_delivered(free: Client, receiver: Receiver) -> None:
    job = lost_job(free, receiver)  # pending, its task not sent: the worker cannot take it before the cancel
    assert free.post(f"{JOBS}/{job.id}/cancel").status_code == 200

    assert free.post(f"{JOBS}/{job.id}/retry").status_code == 200

    retried = wait_for_job(job.id)
    assert (retried.status, retried.attempts, retried.error_message) == ("completed", 1, None)
    assert len(receiver.wait_for(1)) == 1
    tally = DailyTally.objects.get(account=free.account, day=utc_day(timezone.now()))
    assert (tally.completed, tally.failed) == (1, 0)  # the cancel's failure left the day when it was retried


def test_a_cancelled_scheduled_send_is_retried_now_and_its_time_is_cleared(
    free: Client, broker_messages: Callable[[], list[dict[str, Any]]], django_capture_on_commit_callbacks: Any
) -> None:
    send_at = timezone.now() + timedelta(hours=1)
    job_id = free.send_webhook(sendAt=send_at.isoformat()).json()["data"]["jobId"]
    assert free.get(f"{JOBS}/{job_id}").json()["data"]["scheduledFor"] is not None
    assert free.post(f"{JOBS}/{job_id}/cancel").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        assert free.post(f"{JOBS}/{job_id}/retry").status_code == 200

    job = Job.objects.get(id=job_id)
    assert (job.status, job.scheduled_for, job.locked_until) == (JobStatus.PENDING, None, None)
    assert free.get(f"{JOBS}/{job_id}").json()["data"]["scheduledFor"] is None
    assert broker_messages() == [{"task": "notifications.deliver_job", "args": [job_id], "priority": 5}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_a_cancel_is_announced_as_job_failed(free: Client, receiver: Receiver) -> None:
    subscribe(free, receiver, "job.failed")
    job = JobFactory(account=free.account, status=JobStatus.PENDING)

    assert free.post(f"{JOBS}/{job.id}/cancel").status_code == 200
    assert JobAnnouncement.objects.filter(job=job).count() == 1
    assert finished_jobs_announce() == 1

    event = Event.objects.get()
    assert event.type == "job.failed"
    assert (event.data["id"], event.data["status"], event.data["errorMessage"]) == (str(job.id), "failed", "Cancelled")


ROUNDS = 40


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite takes one writer at a time: no race to run")
def test_a_cancel_and_a_claim_at_once_have_exactly_one_winner(free: Client) -> None:
    winners: list[str] = []
    for _ in range(ROUNDS):
        job = JobFactory(account=free.account, status=JobStatus.PENDING)
        outcome = _race(partial(_cancel, free, job), partial(job_claim, job_id=job.id))
        cancelled, claim = outcome["cancel"] == 200, outcome["claim"] is not None
        assert cancelled != claim, outcome
        stored = Job.objects.get(id=job.id)
        assert stored.status == (JobStatus.FAILED if cancelled else JobStatus.PROCESSING)
        winners.append("cancel" if cancelled else "claim")
    failed = DailyTally.objects.filter(account=free.account).values_list("failed", flat=True)
    assert sum(failed) == winners.count("cancel")  # each cancel that won counted once, none that lost


def _cancel(client: Client, job: Job) -> int:
    return int(client.post(f"{JOBS}/{job.id}/cancel").status_code)


def _race(cancel: Callable[[], int], claim: Callable[[], Any]) -> dict[str, Any]:
    """Runs both at once, each in a thread of its own with its own connection."""
    start = threading.Barrier(2)
    outcome: dict[str, Any] = {}

    def run(name: str, act: Callable[[], Any]) -> None:
        try:
            start.wait()
            outcome[name] = act()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=args) for args in (("cancel", cancel), ("claim", claim))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcome
