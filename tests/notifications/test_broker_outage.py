from __future__ import annotations

import time
from typing import Any

import pytest
from celery import Celery

from notifications import queue
from notifications.models import Job
from tests.conftest import Client


@pytest.fixture
def broker_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real Celery app whose broker refuses connections (nothing listens on port 1)."""
    unreachable = Celery("unreachable", broker="redis://127.0.0.1:1/0", set_as_current=False)
    unreachable.conf.broker_connection_timeout = 0.5
    unreachable.conf.task_publish_retry_policy = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1}
    monkeypatch.setattr(queue, "app", unreachable)


@pytest.mark.usefixtures("broker_down")
@pytest.mark.django_db(transaction=True)
def test_an_accepted_job_stands_when_the_broker_is_down(free: Client, caplog: Any) -> None:
    started = time.monotonic()

    response = free.send_webhook()

    assert response.status_code == 202
    assert time.monotonic() - started < 5
    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert job.status == "pending"
    assert job.requeue_at is not None
    assert "will be re-sent by the sweeper" in caplog.text
