"""Recovering in seconds: leases renewed while an attempt runs, records and claims that outlast a database
restart, and tasks the broker lost found by the sweeper (docs/delivery-engine.md)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from notifications.engine import store
from notifications.engine.processing import job_claim, job_process, jobs_sweep
from notifications.engine.queue import DELIVER_TASK, DISPATCH_TASK, dispatch_soon, job_enqueue
from notifications.models import Job, JobStatus
from notifyhub.celery import app as celery_app
from tests.conftest import Client, free_port, wait_for_job
from tests.fakes.receiver import Receiver, Reply

Messages = Callable[[], list[dict[str, Any]]]


@contextmanager
def _database_restarting(*, sparing: int | None, seconds: float) -> Iterator[None]:
    """What a restart of PostgreSQL does to this process: every session of the test database but ``sparing``'s
    (a backend pid) is ended, and new connections are refused for ``seconds`` (they go to a closed port)."""
    port = connection.settings_dict["PORT"]
    params = connection.get_connection_params()
    connection.settings_dict["PORT"] = free_port()
    with psycopg.connect(
        **{key: params[key] for key in ("dbname", "user", "host") if params.get(key)}, port=port
    ) as db:
        db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [sparing or 0],
        )
    back = threading.Timer(seconds, connection.settings_dict.__setitem__, ("PORT", port))
    back.start()
    try:
        yield
    finally:
        back.join()


def _webhook_job(client: Client, receiver: Receiver, messages: Messages) -> UUID:
    """A job accepted through the API whose task no worker will take: the test runs it."""
    job_id = UUID(client.send_webhook(url=receiver.url()).json()["data"]["jobId"])
    messages()
    return job_id


@pytest.mark.django_db(transaction=True)
def test_a_slow_attempt_keeps_its_job_past_its_lease_and_is_sent_once(
    free: Client, receiver: Receiver, delivery_settings: Any, broker_messages: Messages
) -> None:
    delivery_settings.JOB_LEASE_SECONDS = 3
    delivery_settings.WEBHOOK_TIMEOUT_SECONDS = 10
    receiver.script("/hook", Reply(delay=5))
    job_id = _webhook_job(free, receiver, broker_messages)
    worker = threading.Thread(target=_process_and_disconnect, args=(job_id,))
    worker.start()
    receiver.wait_for(1)
    first_lease_end = Job.objects.get(id=job_id).locked_until
    assert first_lease_end is not None

    lease_ends, second_claims, swept = set(), [], []
    while worker.is_alive():
        # What another worker and the sweeper would do meanwhile: neither may take the job.
        lease_ends.add(Job.objects.get(id=job_id).locked_until)
        second_claims.append(job_claim(job_id=job_id))
        swept.append(jobs_sweep())
        time.sleep(0.25)
    worker.join()

    assert second_claims
    assert set(second_claims) == {None}
    assert set(swept) == {0}
    assert max(end for end in lease_ends if end is not None) > first_lease_end
    job = Job.objects.get(id=job_id)
    assert (job.status, job.attempts, job.delivery_logs.count()) == (JobStatus.COMPLETED, 1, 1)
    assert len(receiver.arrivals) == 1


def _process_and_disconnect(job_id: UUID) -> None:
    try:
        job_process(job_id=job_id)
    finally:
        connection.close()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_delivered_attempt_is_recorded_once_the_database_is_back(
    free: Client, receiver: Receiver, delivery_settings: Any, broker_messages: Messages, caplog: Any
) -> None:
    receiver.script("/hook", Reply(delay=0.5))
    job_id = _webhook_job(free, receiver, broker_messages)
    connection.ensure_connection()
    assert connection.connection is not None
    this_session = connection.connection.info.backend_pid

    def restart_once_delivered() -> None:
        receiver.wait_for(1)
        with _database_restarting(sparing=None, seconds=1.5):
            pass

    restart = threading.Thread(target=restart_once_delivered)
    restart.start()
    job_process(job_id=job_id)  # this session ends under it while the receiver answers
    restart.join()

    assert connection.connection is None or connection.connection.info.backend_pid != this_session
    job = Job.objects.get(id=job_id)
    assert (job.status, job.delivery_logs.count()) == (JobStatus.COMPLETED, 1)
    assert len(receiver.arrivals) == 1
    assert "could not record the attempt, trying again" in caplog.text


def _published(job_id: UUID, *, seconds_ago: float) -> None:
    """The job's task went out ``seconds_ago``: its requeue time is its publication plus the 300 s of
    JOB_REQUEUE_AFTER_SECONDS."""
    Job.objects.filter(id=job_id).update(requeue_at=timezone.now() + timedelta(seconds=300 - seconds_ago))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_the_sweeper_resends_a_pending_job_whose_task_the_empty_queue_lost(
    free: Client, receiver: Receiver, broker_messages: Messages
) -> None:
    lost, just_sent = (_webhook_job(free, receiver, broker_messages) for _ in range(2))
    # Sent 10 s ago and 1 s ago: a worker claims a job well within 5 s of its task going out.
    _published(lost, seconds_ago=10)
    _published(just_sent, seconds_ago=1)

    assert jobs_sweep() == 1

    assert [message["args"] for message in broker_messages()] == [[str(lost)]]
    requeue_at = Job.objects.get(id=lost).requeue_at
    assert requeue_at is not None
    assert requeue_at > timezone.now() + timedelta(seconds=250)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_the_sweeper_resends_a_lost_task_older_than_every_queued_one_and_leaves_the_queued_alone(
    free: Client, receiver: Receiver, broker_messages: Messages
) -> None:
    lost, queued = (_webhook_job(free, receiver, broker_messages) for _ in range(2))
    _published(lost, seconds_ago=60)
    _published(queued, seconds_ago=30)
    job_enqueue(job_id=queued, priority=5)  # the task still in the queue, of the job published last
    queued_requeue_at = Job.objects.get(id=queued).requeue_at

    assert jobs_sweep() == 1

    assert sorted(message["args"][0] for message in broker_messages()) == sorted([str(lost), str(queued)])
    assert Job.objects.get(id=queued).requeue_at == queued_requeue_at


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_the_sweeper_finds_a_lost_task_while_a_worker_drains_the_queue_under_its_count(
    free: Client, receiver: Receiver, broker_messages: Messages, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost, *queued = (_webhook_job(free, receiver, broker_messages) for _ in range(4))
    _published(lost, seconds_ago=60)
    for published_ago, job_id in zip((30, 20, 10), queued, strict=True):
        _published(job_id, seconds_ago=published_ago)
        job_enqueue(job_id=job_id, priority=5)
        time.sleep(0.002)  # the file broker keeps the order of messages a millisecond apart
    read_pending_jobs = store.published_last_first
    taken: list[UUID] = []

    def read_while_a_worker_takes_two_tasks(**kwargs: Any) -> list[UUID]:
        # Counted three queued tasks; a worker takes the first two and claims their jobs before the jobs are read.
        with celery_app.connection_for_write() as conn, conn.SimpleQueue("celery") as queue:
            while len(taken) < 2:
                message = queue.get_nowait()
                taken.append(UUID(message.decode()[0][0]))
                assert job_claim(job_id=taken[-1]) is not None
                message.ack()
        return read_pending_jobs(**kwargs)

    monkeypatch.setattr(store, "published_last_first", read_while_a_worker_takes_two_tasks)

    assert jobs_sweep() == 1

    assert sorted(message["args"][0] for message in broker_messages()) == sorted([str(lost), str(queued[2])])
    assert taken == queued[:2]
    assert [Job.objects.get(id=job_id).status for job_id in queued] == [JobStatus.PROCESSING] * 2 + [JobStatus.PENDING]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_a_dead_workers_job_published_again_does_not_hide_a_lost_one(
    free: Client, receiver: Receiver, broker_messages: Messages
) -> None:
    lost, orphaned = (_webhook_job(free, receiver, broker_messages) for _ in range(2))
    _published(lost, seconds_ago=60)
    # Claimed by a worker that died: its lease ran out, and the sweeper published its task again 10 s ago.
    assert job_claim(job_id=orphaned) is not None
    now = timezone.now()
    Job.objects.filter(id=orphaned).update(
        locked_until=now - timedelta(seconds=20), requeue_at=now + timedelta(seconds=290)
    )
    job_enqueue(job_id=orphaned, priority=5)

    assert jobs_sweep() == 1

    assert sorted(message["args"][0] for message in broker_messages()) == sorted([str(lost), str(orphaned)])
    assert Job.objects.get(id=orphaned).status == JobStatus.PROCESSING


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("delivery_settings")
def test_a_task_that_delivers_no_job_does_not_hide_a_lost_one(
    free: Client, receiver: Receiver, broker_messages: Messages
) -> None:
    lost = _webhook_job(free, receiver, broker_messages)
    _published(lost, seconds_ago=60)
    dispatch_soon()  # waits on the first step, a list of its own: the lost job's is empty

    assert jobs_sweep() == 1

    assert [(message["task"], message["args"]) for message in broker_messages()] == [
        (DISPATCH_TASK, []),
        (DELIVER_TASK, [str(lost)]),
    ]


# Last in the module: the in-process worker it starts keeps taking tasks until the module ends.
@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_task_whose_claim_finds_the_database_down_runs_again_once_it_is_back(
    free: Client, receiver: Receiver, worker: None, caplog: Any
) -> None:
    connection.ensure_connection()
    assert connection.connection is not None
    with _database_restarting(sparing=connection.connection.info.backend_pid, seconds=2.5):
        # Accepted on this session, spared by the restart; the worker's claim meets the restart.
        job_id = free.send_webhook(url=receiver.url()).json()["data"]["jobId"]

    job = wait_for_job(job_id, timeout=20)

    assert (job.status, job.delivery_logs.count()) == (JobStatus.COMPLETED, 1)
    assert len(receiver.arrivals) == 1
    assert "database unavailable for the claim, trying again" in caplog.text
