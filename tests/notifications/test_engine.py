"""The engine's guarantees: nothing lost, nothing delivered twice by the engine, priorities kept."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import SigningSecret
from accounts.selectors import signing_secrets_decrypt
from accounts.services import signing_secret_generate
from notifications.delivery.outcome import AttemptOutcome
from notifications.engine.processing import job_claim, job_process, job_record_attempt, jobs_sweep
from notifications.engine.queue import BROKER_PRIORITY, job_enqueue
from notifications.models import DeliveryLog, Job, JobStatus, JobType
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Receiver, Reply


def lost_job(client: Client, receiver: Receiver) -> Job:
    """A job stored as the API stores it, whose broker message never got sent."""
    return Job.objects.create(
        account=client.account,
        type=JobType.WEBHOOK,
        payload={"url": receiver.url(), "method": "POST", "headers": {}, "payload": {"n": 1}},
        requeue_at=timezone.now() + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS),
    )


@pytest.mark.usefixtures("worker")
def test_the_sweeper_delivers_a_job_whose_task_was_lost(free: Client, receiver: Receiver) -> None:
    job = lost_job(free, receiver)
    time.sleep(0.5)
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING

    Job.objects.filter(id=job.id).update(requeue_at=timezone.now())
    assert jobs_sweep() == 1

    assert wait_for_job(job.id).status == JobStatus.COMPLETED
    assert len(receiver.wait_for(1)) == 1


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_leaves_jobs_that_are_not_due(free: Client, receiver: Receiver) -> None:
    lost_job(free, receiver)

    assert jobs_sweep() == 0


@pytest.mark.usefixtures("worker")
def test_the_same_task_twice_delivers_once(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(delay=0.5))
    job = lost_job(free, receiver)

    job_enqueue(job_id=job.id, priority=5)
    job_enqueue(job_id=job.id, priority=5)
    wait_for_job(job.id)
    time.sleep(1)

    assert len(receiver.arrivals) == 1
    assert Job.objects.get(id=job.id).delivery_logs.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_job_held_by_a_live_lease_cannot_be_claimed_again(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    job = lost_job(free, receiver)
    Job.objects.filter(id=job.id).update(
        status=JobStatus.PROCESSING, locked_until=timezone.now() + timedelta(minutes=1)
    )

    job_process(job_id=job.id)

    assert receiver.arrivals == []
    assert Job.objects.get(id=job.id).attempts == 0


@pytest.mark.django_db(transaction=True)
def test_a_finished_job_is_never_claimed(free: Client, receiver: Receiver, delivery_settings: Any) -> None:
    job = lost_job(free, receiver)
    job_process(job_id=job.id)

    job_process(job_id=job.id)

    assert Job.objects.get(id=job.id).status == JobStatus.COMPLETED
    assert len(receiver.arrivals) == 1


def test_a_webhook_retry_seconds_away_is_published_at_once_counted_down_at_the_jobs_priority(
    free: Client,
    receiver: Receiver,
    delivery_settings: Any,
    broker_messages: Callable[[], list[dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    receiver.script("/hook", Reply(status=503))
    job = lost_job(free, receiver)

    with django_capture_on_commit_callbacks(execute=True):
        job_process(job_id=job.id)

    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 1)
    assert job.next_attempt_at is not None
    assert job.locked_until == job.next_attempt_at
    assert job.requeue_at == job.next_attempt_at + timedelta(seconds=settings.JOB_RETRY_GRACE_SECONDS)
    (message,) = broker_messages()
    assert (message["args"], message["priority"]) == ([str(job.id)], BROKER_PRIORITY[job.priority])
    assert message["eta"] == pytest.approx(job.next_attempt_at, abs=timedelta(seconds=0.1))
    assert (job.next_attempt_at - timezone.now()).total_seconds() == pytest.approx(1, abs=0.5)


def test_a_claim_takes_the_job_in_one_statement_and_returns_it_as_stored(free: Client) -> None:
    job = Job.objects.create(
        account=free.account,
        type=JobType.WEBHOOK,
        payload={"url": "https://hooks.example.com/in", "method": "PUT", "headers": {}, "payload": {"z": 1, "a": 2}},
    )

    with CaptureQueriesContext(connection) as queries:
        claim = job_claim(job_id=job.id)
    again = job_claim(job_id=job.id)

    assert len(queries) == 1
    assert claim is not None
    assert again is None  # the lease holds the second claim off
    claimed = claim.job
    assert (claimed.id, claimed.account_id, claimed.status) == (job.id, free.account.id, JobStatus.PROCESSING)
    assert list(claimed.payload["payload"]) == ["z", "a"]
    assert claimed.payload["method"] == "PUT"
    assert claimed.started_at is not None
    assert claimed.started_at.tzinfo is not None
    assert claimed.locked_until == Job.objects.get(id=job.id).locked_until
    assert claimed.requeue_at == claimed.locked_until
    assert claim.encrypted_signing_secrets == ()  # this account has none
    assert claim.account_usable


def test_a_claim_brings_the_signing_secret_of_the_jobs_own_account(make_client: Callable[..., Client]) -> None:
    owner, other = make_client(), make_client()
    signing_secret_generate(account=other.account)
    owner_secret = signing_secret_generate(account=owner.account)
    job = Job.objects.create(account=owner.account, type=JobType.WEBHOOK, payload={})

    claim = job_claim(job_id=job.id)

    assert claim is not None
    assert signing_secrets_decrypt(*claim.encrypted_signing_secrets) == [owner_secret]  # never rotated


def test_a_claim_brings_a_rotated_out_secret_only_while_it_still_signs(free: Client) -> None:
    old = signing_secret_generate(account=free.account)
    new = signing_secret_generate(account=free.account)
    first = Job.objects.create(account=free.account, type=JobType.WEBHOOK, payload={})
    second = Job.objects.create(account=free.account, type=JobType.WEBHOOK, payload={})

    during = job_claim(job_id=first.id)
    SigningSecret.objects.filter(account=free.account).update(previous_signs_until=timezone.now())
    after = job_claim(job_id=second.id)

    assert during is not None
    assert after is not None
    assert signing_secrets_decrypt(*during.encrypted_signing_secrets) == [new, old]
    assert signing_secrets_decrypt(*after.encrypted_signing_secrets) == [new]


def test_a_job_whose_lease_ran_out_can_be_claimed_again(free: Client) -> None:
    job = Job.objects.create(account=free.account, type=JobType.WEBHOOK, payload={})
    first_claim = job_claim(job_id=job.id)
    Job.objects.filter(id=job.id).update(locked_until=timezone.now() - timedelta(seconds=5))

    second_claim = job_claim(job_id=job.id)

    assert first_claim is not None
    assert second_claim is not None
    first, second = first_claim.job, second_claim.job
    assert second.started_at == first.started_at  # the first attempt's start is kept
    assert second.locked_until is not None
    assert second.locked_until > timezone.now()  # a fresh lease


def _claimed(client: Client) -> Job:
    job = Job.objects.create(account=client.account, type=JobType.WEBHOOK, payload={})
    claim = job_claim(job_id=job.id)
    assert claim is not None
    return claim.job


@pytest.mark.django_db(transaction=True)
def test_an_attempt_is_recorded_with_its_log_in_one_go(free: Client) -> None:
    job = _claimed(free)
    outcome = AttemptOutcome(delivered=True, response_status=204, duration_ms=12, response_excerpt="ok")

    with CaptureQueriesContext(connection) as queries:
        job_record_attempt(job=job, outcome=outcome)

    # One statement on PostgreSQL; elsewhere a transaction of three: the job, its log, its day's tally.
    assert len(queries) == (1 if connection.vendor == "postgresql" else 5)
    stored = Job.objects.get(id=job.id)
    assert (stored.status, stored.attempts, stored.locked_until, stored.requeue_at) == ("completed", 1, None, None)
    assert stored.completed_at is not None
    log = DeliveryLog.objects.get(job=job)
    assert (log.attempt, log.status, log.response_status, log.duration_ms, log.response_excerpt) == (
        1,
        "success",
        204,
        12,
        "ok",
    )


def test_an_attempt_whose_lease_was_lost_is_not_recorded(free: Client, caplog: Any) -> None:
    job = _claimed(free)
    Job.objects.filter(id=job.id).update(locked_until=timezone.now() + timedelta(minutes=9))  # another worker's lease

    job_record_attempt(job=job, outcome=AttemptOutcome.failure("503 Service Unavailable", retryable=True))

    stored = Job.objects.get(id=job.id)
    assert (stored.status, stored.attempts, stored.error_message) == ("processing", 0, None)
    assert not DeliveryLog.objects.filter(job=job).exists()
    assert "lease lost" in caplog.text


def _worker_dies_holding(job: Job) -> None:
    """A worker claims the job and dies mid-attempt: nothing is recorded, and its lease runs out."""
    assert job_claim(job_id=job.id) is not None
    Job.objects.filter(id=job.id).update(locked_until=timezone.now() - timedelta(seconds=5))


def _processed_after_worker_deaths(client: Client, receiver: Receiver, deaths: int) -> Job:
    job = lost_job(client, receiver)
    for _ in range(deaths):
        _worker_dies_holding(job)
    job_process(job_id=job.id)
    return Job.objects.get(id=job.id)


@pytest.mark.django_db(transaction=True)
def test_an_attempt_that_killed_three_workers_fails_without_a_fourth_try(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    stored = _processed_after_worker_deaths(free, receiver, deaths=3)

    assert receiver.arrivals == []
    message = "Stopped: a worker died 3 times during this attempt"
    assert (stored.status, stored.attempts, stored.claims, stored.error_message) == ("failed", 1, 4, message)
    assert stored.locked_until is None
    assert stored.requeue_at is None  # the sweeper leaves it alone
    log = DeliveryLog.objects.get(job=stored)
    assert (log.attempt, log.status, log.error_message, log.response_status) == (1, "failed", message, None)


@pytest.mark.django_db(transaction=True)
def test_a_job_whose_worker_died_twice_is_still_delivered(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    stored = _processed_after_worker_deaths(free, receiver, deaths=2)

    assert len(receiver.arrivals) == 1
    assert (stored.status, stored.attempts, stored.claims) == ("completed", 1, 3)


@pytest.mark.django_db(transaction=True)
def test_each_attempt_gets_its_own_allowance_of_worker_deaths(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    receiver.script("/hook", Reply(status=503))
    job = lost_job(free, receiver)
    job_process(job_id=job.id)  # attempt 1: 503, a retry is due
    Job.objects.filter(id=job.id).update(locked_until=timezone.now() - timedelta(seconds=5))
    for _ in range(2):
        _worker_dies_holding(job)

    job_process(job_id=job.id)  # attempt 2, after two deaths of its own

    stored = Job.objects.get(id=job.id)
    assert (stored.status, stored.attempts, stored.claims) == ("completed", 2, 4)
    assert len(receiver.arrivals) == 2
