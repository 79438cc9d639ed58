"""The dashboard's daily figures: each finished job counted once, on its day, as the worker records it."""

from __future__ import annotations

import importlib
import time
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.apps import apps
from django.utils import timezone

from notifications.models import DailyTally, DeliveryLog, Job, JobStatus
from tests.conftest import Client, wait_for_job
from tests.factories import JobFactory
from tests.fakes.receiver import Receiver, Reply


def today() -> Any:
    return timezone.now().astimezone(UTC).date()


def tallies(client: Client) -> list[tuple[Any, int, int]]:
    return list(DailyTally.objects.filter(account=client.account).values_list("day", "completed", "failed"))


def send(client: Client, receiver: Receiver, path: str) -> str:
    response = client.send_webhook(url=receiver.url(path), payload={"n": 1})
    assert response.status_code == 202, response.json()
    return response.json()["data"]["jobId"]


@pytest.mark.usefixtures("worker")
def test_each_finished_job_is_counted_on_the_day_it_finished(free: Client, receiver: Receiver) -> None:
    receiver.script("/refused", Reply(status=400))
    completed = [send(free, receiver, "/ok") for _ in range(2)]
    refused = send(free, receiver, "/refused")

    for job_id in [*completed, refused]:
        wait_for_job(job_id)

    assert tallies(free) == [(today(), 2, 1)]
    figures = free.get("/api/v1/user/dashboard", days="7").json()["data"]
    assert figures["days"][-1] == {"date": today().isoformat(), "completed": 2, "failed": 1}
    assert figures["totals"] == {"completed": 2, "failed": 1}


@pytest.mark.usefixtures("worker")
def test_an_attempt_that_will_be_retried_counts_nothing(free: Client, receiver: Receiver, settings: Any) -> None:
    settings.WEBHOOK_RETRY_DELAYS = [60, 60]
    receiver.script("/flaky", Reply(status=503))
    job_id = send(free, receiver, "/flaky")

    receiver.wait_for(1)
    first_attempt = DeliveryLog.objects.filter(job_id=job_id)
    deadline = time.monotonic() + 10
    while not first_attempt.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    job = Job.objects.get(id=job_id)

    assert (job.status, job.attempts, job.next_attempt_at is not None) == (JobStatus.PROCESSING, 1, True)
    assert tallies(free) == []


@pytest.mark.usefixtures("worker")
def test_a_retried_job_leaves_the_failed_count_and_is_counted_again_when_it_finishes(
    free: Client, receiver: Receiver
) -> None:
    receiver.script("/once", Reply(status=400))
    job_id = send(free, receiver, "/once")
    wait_for_job(job_id)
    assert tallies(free) == [(today(), 0, 1)]

    retry = free.post(f"/api/v1/notifications/jobs/{job_id}/retry")

    assert retry.status_code == 200, retry.json()
    assert wait_for_job(job_id).status == JobStatus.COMPLETED
    assert tallies(free) == [(today(), 1, 0)]


@pytest.mark.django_db
def test_retrying_takes_the_job_off_the_day_it_failed(free: Client) -> None:
    failed_on = timezone.now() - timedelta(days=3)
    job = JobFactory(account=free.account, status=JobStatus.FAILED, attempts=3, finished_at=failed_on)
    DailyTally.objects.create(account=free.account, day=failed_on.astimezone(UTC).date(), completed=4, failed=2)

    assert free.post(f"/api/v1/notifications/jobs/{job.id}/retry").status_code == 200

    assert tallies(free) == [(failed_on.astimezone(UTC).date(), 4, 1)]


@pytest.mark.django_db
def test_the_migration_counts_the_jobs_that_finished_before_it(free: Client, startup: Client) -> None:
    yesterday = timezone.now() - timedelta(days=1)
    JobFactory.create_batch(2, account=free.account, status=JobStatus.COMPLETED, finished_at=yesterday)
    JobFactory(account=free.account, status=JobStatus.FAILED, finished_at=yesterday)
    JobFactory(account=free.account, status=JobStatus.PENDING)
    JobFactory(account=startup.account, status=JobStatus.FAILED, finished_at=timezone.now())
    migration = importlib.import_module("notifications.migrations.0006_daily_tally")

    migration.tally_finished_jobs(apps, schema_editor=None)

    assert tallies(free) == [(yesterday.astimezone(UTC).date(), 2, 1)]
    assert tallies(startup) == [(today(), 0, 1)]
