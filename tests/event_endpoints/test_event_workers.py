"""A worker killed during a burst of events loses none of them: each is delivered once its lease is over.

No in-process worker runs in this module; the test starts the worker processes it needs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from event_endpoints.delivery import event_deliveries_sweep
from event_endpoints.models import EventDelivery, EventDeliveryStatus
from notifications.engine.processing import jobs_sweep
from notifications.models import Job, JobStatus
from tests.conftest import Client, purge_broker
from tests.event_endpoints.test_event_delivery import subscribe
from tests.fakes.receiver import Receiver, Reply
from tests.notifications.test_engine_workers import _worker_process, processes, worker_env

__all__ = ["processes", "worker_env"]

JOBS = 20


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_worker_killed_during_an_event_burst_loses_no_event(
    startup: Client, receiver: Receiver, worker_env: dict[str, str], processes: list[subprocess.Popen[bytes]]
) -> None:
    receiver.answer_always("/events", Reply(delay=0.3))  # slow enough that the kill lands mid-burst
    subscribe(startup, receiver, "job.completed")
    purge_broker()
    first = _worker_process(worker_env)
    processes.append(first)
    job_ids = {startup.send_webhook(url=receiver.url()).json()["data"]["jobId"] for _ in range(JOBS)}
    _wait_for(lambda: len(_arrived_events(receiver)) >= 3, timeout=40)

    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    unfinished_at_the_kill = EventDelivery.objects.exclude(status=EventDeliveryStatus.COMPLETED).count()
    processes.append(_worker_process(worker_env))

    def all_delivered() -> bool:
        jobs_sweep()  # what beat does every few seconds
        event_deliveries_sweep()
        return EventDelivery.objects.filter(status=EventDeliveryStatus.COMPLETED).count() == JOBS

    _wait_for(all_delivered, timeout=80)

    assert unfinished_at_the_kill > 0
    assert set(Job.objects.values_list("status", flat=True)) == {JobStatus.COMPLETED}
    assert EventDelivery.objects.filter(status=EventDeliveryStatus.COMPLETED).count() == JOBS
    arrived = _arrived_events(receiver)
    # Every job's event arrived; one the kill cut short may have arrived twice, under the same id.
    assert {body["data"]["id"] for body in arrived.values()} == job_ids
    assert len(arrived) == JOBS


def _arrived_events(receiver: Receiver) -> dict[str, dict[str, object]]:
    """The events that reached the endpoint by their X-Webhook-Id, as a receiver deduplicates them."""
    return {
        arrival.headers["X-Webhook-Id"]: json.loads(arrival.body)
        for arrival in list(receiver.arrivals)
        if arrival.path == "/events"
    }


def _wait_for(condition: Callable[[], bool], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)
