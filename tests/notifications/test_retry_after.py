"""A receiver's Retry-After on a 503 sets the next attempt's delay when it asks for longer (docs/rules.md, "Webhooks").

The worker is real and WEBHOOK_RETRY_DELAYS is [1, 2] (tests/conftest.py): waits of a few seconds show a
Retry-After winning without slowing the suite down.
"""

from __future__ import annotations

import time
from datetime import datetime
from email.utils import formatdate
from itertools import pairwise
from typing import Any

import pytest

from notifications.delivery.webhook import RETRY_AFTER_MAX_SECONDS, retry_after_seconds
from notifications.models import Job, JobStatus
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Arrival, Receiver, Reply


def http_date(at: float) -> str:
    return formatdate(at, usegmt=True)


def send(client: Client, receiver: Receiver) -> str:
    response = client.send_webhook(url=receiver.url())
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["jobId"])


def wait_for_attempts(job_id: str, attempts: int, timeout: float = 10.0) -> Job:
    deadline = time.monotonic() + timeout
    while (job := Job.objects.get(id=job_id)).attempts < attempts and time.monotonic() < deadline:
        time.sleep(0.02)
    return job


def first_attempt(client: Client, receiver: Receiver) -> tuple[Job, Arrival]:
    """Sends a webhook and returns the job once its first attempt is recorded, with that attempt's arrival."""
    job = wait_for_attempts(send(client, receiver), 1)
    assert job.attempts == 1
    return job, receiver.arrivals[0]


def assert_due(next_attempt_at: datetime | None, arrival: Arrival, seconds: float) -> None:
    """The next attempt is due ``seconds`` after the first arrived, give or take a second."""
    assert next_attempt_at is not None
    assert next_attempt_at.timestamp() == pytest.approx(arrival.at + seconds, abs=1)


def logs(job: Job) -> list[tuple[int, str, int | None, str | None]]:
    rows = job.delivery_logs.order_by("created_at")
    return [(log.attempt, log.status, log.response_status, log.error_message) for log in rows]


UNAVAILABLE = (1, "failed", 503, "503 Service Unavailable")
DELIVERED = (2, "success", 200, None)


@pytest.mark.usefixtures("worker")
def test_a_503_with_retry_after_seconds_waits_that_long(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=503, headers={"Retry-After": "3"}))

    job, arrival = first_attempt(free, receiver)
    shown = free.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]
    job = wait_for_job(job.id)

    assert_due(datetime.fromisoformat(shown["nextAttemptAt"]), arrival, 3)
    assert (shown["status"], shown["attempts"], shown["errorMessage"]) == ("processing", 1, "503 Service Unavailable")
    assert (job.status, job.attempts, job.next_attempt_at) == (JobStatus.COMPLETED, 2, None)
    assert logs(job) == [UNAVAILABLE, DELIVERED]
    second = receiver.wait_for(2)[1]
    assert 2.9 <= second.at - arrival.at < 4.5


@pytest.mark.usefixtures("worker")
def test_a_503_with_retry_after_as_a_date_waits_until_then(free: Client, receiver: Receiver) -> None:
    due = time.time() + 3
    receiver.script("/hook", Reply(status=503, headers={"Retry-After": http_date(due)}))

    job, arrival = first_attempt(free, receiver)
    assert_due(job.next_attempt_at, arrival, due - arrival.at)
    job = wait_for_job(job.id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 2)
    assert logs(job) == [UNAVAILABLE, DELIVERED]
    assert receiver.wait_for(2)[1].at >= int(due) - 0.1


@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize("retry_after", ["3", "date"])
def test_a_429_fails_at_once_whatever_its_retry_after(free: Client, receiver: Receiver, retry_after: str) -> None:
    value = http_date(time.time() + 3) if retry_after == "date" else retry_after
    receiver.script("/hook", Reply(status=429, headers={"Retry-After": value}))

    job = wait_for_job(send(free, receiver))

    assert (job.status, job.attempts, job.next_attempt_at) == (JobStatus.FAILED, 1, None)
    assert logs(job) == [(1, "failed", 429, "429 Too Many Requests")]
    time.sleep(1.5)
    assert len(receiver.arrivals) == 1


@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize("retry_after", ["86400", "9" * 5000, "date"])
def test_a_huge_retry_after_is_capped_at_an_hour(free: Client, receiver: Receiver, retry_after: str) -> None:
    value = http_date(time.time() + 7 * 86400) if retry_after == "date" else retry_after
    receiver.script("/hook", Reply(status=503, headers={"Retry-After": value}))

    job, arrival = first_attempt(free, receiver)

    assert job.status == JobStatus.PROCESSING
    assert_due(job.next_attempt_at, arrival, RETRY_AFTER_MAX_SECONDS)
    assert logs(job) == [UNAVAILABLE]


@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize("retry_after", ["soon", "-5", "2.5", "", "past date"])
def test_a_malformed_negative_or_past_retry_after_is_ignored(
    free: Client, receiver: Receiver, retry_after: str
) -> None:
    value = http_date(time.time() - 60) if retry_after == "past date" else retry_after
    receiver.script("/hook", Reply(status=503, headers={"Retry-After": value}))

    job, arrival = first_attempt(free, receiver)
    assert_due(job.next_attempt_at, arrival, 1)
    job = wait_for_job(job.id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 2)
    assert logs(job) == [UNAVAILABLE, DELIVERED]


@pytest.mark.usefixtures("worker")
def test_a_retry_after_shorter_than_the_configured_delay_gives_way_to_it(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    delivery_settings.WEBHOOK_RETRY_DELAYS = [3, 3]
    receiver.script("/hook", Reply(status=503, headers={"Retry-After": "1"}))

    job, arrival = first_attempt(free, receiver)
    assert_due(job.next_attempt_at, arrival, 3)
    job = wait_for_job(job.id)

    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 2)
    assert receiver.wait_for(2)[1].at - arrival.at >= 2.9


@pytest.mark.usefixtures("worker")
def test_retry_after_adds_no_attempt_three_503s_fail_the_job(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    delivery_settings.WEBHOOK_RETRY_DELAYS = [0, 0]
    receiver.script("/hook", *[Reply(status=503, headers={"Retry-After": "1"})] * 3)

    job = wait_for_job(send(free, receiver))

    assert (job.status, job.attempts, job.next_attempt_at) == (JobStatus.FAILED, 3, None)
    assert [row[:3] for row in logs(job)] == [(1, "failed", 503), (2, "failed", 503), (3, "failed", 503)]
    assert min(later.at - earlier.at for earlier, later in pairwise(receiver.wait_for(3))) >= 0.9


@pytest.mark.usefixtures("worker")
def test_another_5xx_keeps_the_configured_delay(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=500, headers={"Retry-After": "30"}))

    job, arrival = first_attempt(free, receiver)

    assert_due(job.next_attempt_at, arrival, 1)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7),
        (" 0007 ", 7),
        ("3600", 3600),
        ("3601", 3600),
        ("0", None),
        ("Sat, 15 Jan 2027 08:00:07 GMT", 7),  # IMF-fixdate
        ("Friday, 15-Jan-27 08:00:07 GMT", 7),  # the obsolete RFC 850 form
        ("Fri Jan 15 08:00:07 2027", 7),  # asctime
        ("Fri Jan 15 08:00:00 2027", None),  # now is not later
        ("1e3", None),
        ("\u0667", None),  # ARABIC-INDIC DIGIT SEVEN: a digit to str.isdigit(), not to RFC 9110
    ],
)
def test_retry_after_values_are_read_as_rfc_9110_says(value: str, seconds: int | None) -> None:
    now = datetime.fromisoformat("2027-01-15T08:00:00+00:00").timestamp()

    assert retry_after_seconds(value, now=now) == seconds
