"""Engine guarantees that need to own the only worker: a crash mid-delivery, and broker priorities.

No in-process worker runs in this module; each test starts the workers it needs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from accounts.plans import Plan
from notifications.engine.processing import jobs_sweep
from notifications.models import Job, JobStatus
from tests.conftest import Client, purge_broker, wait_for_job, worker_thread
from tests.fakes.receiver import Receiver, Reply
from tests.notifications.test_engine import lost_job


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_pushes_a_due_job_once_per_requeue_period(free: Client, receiver: Receiver) -> None:
    job = lost_job(free, receiver)
    Job.objects.filter(id=job.id).update(requeue_at=timezone.now() - timedelta(seconds=1))

    assert (jobs_sweep(), jobs_sweep()) == (1, 0)
    assert Job.objects.get(id=job.id).requeue_at > timezone.now() + timedelta(seconds=250)


def _worker_process(env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "notifyhub", "worker", "--pool", "solo", "--loglevel", "WARNING"]
    return subprocess.Popen(command, env=env, cwd=settings.BASE_DIR, start_new_session=True)


@pytest.fixture
def worker_env(delivery_settings: Any) -> dict[str, str]:
    """The environment of a worker process that uses this test run's database and broker."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    else:
        database_url = f"sqlite:///{db['NAME']}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database_url,
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "WEBHOOK_CA_BUNDLE": delivery_settings.WEBHOOK_CA_BUNDLE,
        "JOB_LEASE_SECONDS": "3",
    }
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    return env


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
def test_a_worker_killed_mid_delivery_loses_nothing(
    free: Client, receiver: Receiver, worker_env: dict[str, str], processes: list[subprocess.Popen[bytes]]
) -> None:
    receiver.script("/hook", Reply(delay=30))
    purge_broker()
    first = _worker_process(worker_env)
    processes.append(first)
    job_id = free.send_webhook(url=receiver.url()).json()["data"]["jobId"]
    receiver.wait_for(1, timeout=30)

    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert Job.objects.get(id=job_id).status == JobStatus.PROCESSING

    processes.append(_worker_process(worker_env))
    deadline = time.monotonic() + 40
    while Job.objects.get(id=job_id).status != JobStatus.COMPLETED and time.monotonic() < deadline:
        jobs_sweep()  # what beat does every few seconds
        time.sleep(0.5)

    job = Job.objects.get(id=job_id)
    assert job.status == JobStatus.COMPLETED
    assert [log.status for log in job.delivery_logs.all()] == ["success"]
    # The killed attempt reached the receiver too: X-Webhook-Id lets it drop the repeat.
    arrivals = receiver.wait_for(2)
    assert {a.headers["X-Webhook-Id"] for a in arrivals} == {job_id}


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_high_priority_job_overtakes_a_queue_of_low_priority_ones(
    make_client: Callable[..., Client], receiver: Receiver, delivery_settings: Any
) -> None:
    client = make_client(Plan.STARTUP)
    purge_broker()
    for n in range(30):
        assert client.send_webhook(url=receiver.url("/low"), priority=10, payload={"n": n}).status_code == 202
    urgent = client.send_webhook(url=receiver.url("/urgent"), priority=1).json()["data"]["jobId"]

    with worker_thread():
        wait_for_job(urgent)
        arrivals = receiver.wait_for(3)

    assert arrivals[0].path == "/urgent"
