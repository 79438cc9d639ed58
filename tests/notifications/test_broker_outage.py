from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from celery import Celery
from django.utils import timezone

from notifications.engine import queue
from notifications.engine.processing import jobs_dispatch
from notifications.models import Job
from tests.conftest import Client
from tests.factories import AppFactory, EndpointFactory, JobFactory


@pytest.fixture
def broker_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real Celery app whose broker refuses connections (nothing listens on port 1)."""
    unreachable = Celery("unreachable", broker="redis://127.0.0.1:1/0", set_as_current=False)
    unreachable.conf.broker_connection_timeout = 0.5
    unreachable.conf.task_publish_retry_policy = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1}
    monkeypatch.setattr(queue, "app", unreachable)
    # Producers already made in this thread speak to the real broker.
    monkeypatch.setattr(queue, "_thread", threading.local())


@pytest.mark.usefixtures("broker_down")
@pytest.mark.django_db(transaction=True)
def test_an_accepted_job_stands_when_the_broker_is_down_and_is_due_for_the_sweeper(free: Client, caplog: Any) -> None:
    started = time.monotonic()

    response = free.send_webhook()

    assert response.status_code == 202
    assert time.monotonic() - started < 5
    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert job.status == "pending"
    # Marked for the sweeper's next tick, not left for the requeue time minutes away.
    assert job.requeue_at is not None
    assert job.requeue_at <= timezone.now()
    assert "will be re-sent by the sweeper" in caplog.text


@pytest.mark.redis
@pytest.mark.django_db
def test_the_first_send_after_an_outage_reaches_the_broker(
    monkeypatch: pytest.MonkeyPatch, broker_messages: Callable[[], list[dict[str, Any]]], caplog: Any
) -> None:
    job_id = uuid4()
    # This thread's producers from earlier tests speak to the real broker: start without one.
    monkeypatch.setattr(queue, "_thread", threading.local())
    with monkeypatch.context() as outage:
        outage.setattr(queue, "app", Celery("unreachable", broker="redis://127.0.0.1:1/0", set_as_current=False))
        queue.app.conf.broker_connection_timeout = 0.5
        queue.app.conf.task_publish_retry_policy = {"max_retries": 0}
        queue.job_enqueue(job_id=uuid4(), priority=5)
        assert "will be re-sent by the sweeper" in caplog.text

    # The failed producer was dropped, so this thread's next send builds one on the real broker.
    queue.job_enqueue(job_id=job_id, priority=1, countdown=30)

    (message,) = broker_messages()
    assert message == {"task": "notifications.deliver_job", "args": [str(job_id)], "priority": 0, "eta": message["eta"]}
    assert (message["eta"] - timezone.now()).total_seconds() == pytest.approx(30, abs=2)


@pytest.mark.usefixtures("broker_down")
@pytest.mark.django_db(transaction=True)
def test_the_dispatcher_leaves_the_rest_of_its_run_to_the_sweeper_once_the_broker_fails(
    startup: Client, caplog: Any
) -> None:
    due = timezone.now() - timedelta(seconds=1)
    jobs = [JobFactory(account=startup.account, requeue_at=due) for _ in range(20)]
    started = time.monotonic()

    assert jobs_dispatch() == 20

    # One publish waited out its retries, not twenty.
    assert time.monotonic() - started < 5
    assert caplog.text.count("will be re-sent by the sweeper") == 1
    assert "20 job(s) will be re-sent by the sweeper" in caplog.text
    for job in Job.objects.filter(id__in=[job.id for job in jobs]):
        assert job.requeue_at is not None
        assert job.requeue_at <= timezone.now()  # due again for the sweeper's first tick once the broker answers


@pytest.mark.usefixtures("broker_down")
@pytest.mark.django_db(transaction=True)
def test_a_messages_deliveries_stand_when_the_broker_is_down_and_are_due_for_the_sweeper(
    startup: Client, caplog: Any
) -> None:
    app = AppFactory(account=startup.account)
    for _ in range(3):
        EndpointFactory(app=app)
    started = time.monotonic()

    response = startup.post(f"/api/v1/apps/{app.id}/messages", {"eventType": "invoice.paid", "payload": {}})

    assert response.status_code == 202
    # Published together: one failure, not three publishes waiting out their retries.
    assert time.monotonic() - started < 5
    assert caplog.text.count("will be re-sent by the sweeper") == 1
    assert "3 job(s) will be re-sent by the sweeper" in caplog.text
    jobs = Job.objects.filter(message_id=response.json()["data"]["messageId"])
    assert [job.status for job in jobs] == ["pending"] * 3
    assert all(job.requeue_at is not None and job.requeue_at <= timezone.now() for job in jobs)
