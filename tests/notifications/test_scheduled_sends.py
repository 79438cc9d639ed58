"""Scheduled sends: `sendAt` keeps a job pending, unclaimable, until the dispatcher sends its task at its time
(docs/rules.md, "Scheduled sends")."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from accounts.models import Account
from core.api.envelope import iso_utc
from core.api.fields import ZonedDateTimeField
from notifications.engine.processing import job_claim, jobs_dispatch, jobs_sweep
from notifications.engine.store import published_last_first, take_due_for_requeue
from notifications.models import Job, JobStatus, Priority
from tests.api.test_envelope import assert_error
from tests.conftest import WEBHOOK, Client, locked_elsewhere, wait_for_job
from tests.fakes.receiver import Receiver

JOBS = "/api/v1/notifications/jobs"
Messages = Callable[[], list[dict[str, Any]]]


def _in(seconds: float) -> datetime:
    return timezone.now() + timedelta(seconds=seconds)


def _schedule(client: Client, send_at: datetime | str, **body: Any) -> Job:
    value = send_at if isinstance(send_at, str) else send_at.isoformat()
    response = client.send_webhook(sendAt=value, **body)
    assert response.status_code == 202, response.json()
    return Job.objects.get(id=response.json()["data"]["jobId"])


def _come_due(job: Job) -> None:
    """Its time passes (the clock is not ours to move)."""
    past = timezone.now() - timedelta(seconds=1)
    Job.objects.filter(id=job.id).update(scheduled_for=past, locked_until=past, requeue_at=past)


def test_a_scheduled_send_waits_pending_and_unclaimable_until_its_time(
    free: Client, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    send_at = _in(3600)

    with django_capture_on_commit_callbacks(execute=True) as after_commit:
        job = _schedule(free, send_at)

    assert (job.status, job.scheduled_for, job.locked_until, job.requeue_at) == ("pending", send_at, send_at, send_at)
    assert after_commit == []  # no task until its time
    assert broker_messages() == []
    assert job_claim(job_id=job.id) is None  # a stray task claims nothing before then
    assert jobs_dispatch() == 0
    shown = free.get(f"{JOBS}/{job.id}").json()["data"]
    assert (shown["status"], shown["scheduledFor"]) == ("pending", iso_utc(send_at))
    assert free.get(JOBS).json()["data"]["data"][0]["scheduledFor"] == iso_utc(send_at)


def test_the_dispatcher_sends_the_task_once_its_time_has_come(free: Client, broker_messages: Messages) -> None:
    job = _schedule(free, _in(3600))
    _come_due(job)

    assert jobs_dispatch() == 1

    assert broker_messages() == [{"task": "notifications.deliver_job", "args": [str(job.id)], "priority": 5}]
    assert jobs_dispatch() == 0  # sent once: its requeue time moved on
    claim = job_claim(job_id=job.id)
    assert claim is not None
    assert claim.job.scheduled_for is not None  # still says when it was scheduled for


def test_the_dispatcher_sends_a_large_batch_in_one_run(startup: Client, broker_messages: Messages) -> None:
    jobs = [_schedule(startup, _in(3600)) for _ in range(7)]
    for job in jobs:
        _come_due(job)

    assert jobs_dispatch(batch_size=3) == 7

    assert sorted(message["args"][0] for message in broker_messages()) == sorted(str(job.id) for job in jobs)


def test_a_past_send_at_sends_at_once(
    free: Client, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job = _schedule(free, _in(-60))

    assert (job.scheduled_for, job.locked_until) == (None, None)
    assert [message["args"] for message in broker_messages()] == [[str(job.id)]]


@pytest.mark.parametrize(
    ("send_at", "message"),
    [
        ("2026-12-01T09:00:00", "sendAt must be an ISO 8601 date-time"),  # no zone
        ("tomorrow at nine", "sendAt must be an ISO 8601 date-time"),
        ("2026-13-01T09:00:00Z", "sendAt must be an ISO 8601 date-time"),
        (1764579600, "sendAt must be an ISO 8601 date-time"),
        ("", "sendAt must be an ISO 8601 date-time"),
    ],
)
def test_a_bad_send_at_is_400(free: Client, send_at: Any, message: str) -> None:
    assert_error(free.send_webhook(sendAt=send_at), 400, message)
    assert_error(free.send_email(sendAt=send_at), 400, message)
    assert not Job.objects.exists()


def test_a_send_at_past_30_days_is_400(free: Client) -> None:
    too_far = (timezone.now() + timedelta(days=30, minutes=1)).astimezone(UTC).isoformat()

    assert_error(free.send_webhook(sendAt=too_far), 400, "sendAt must be within 30 days")
    assert not Job.objects.exists()
    assert _schedule(free, _in(29 * 24 * 3600)).status == JobStatus.PENDING  # within 30 days


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("2030-01-02t03:04:05z", datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)),  # RFC 3339 allows lower case
        ("2030-06-30T23:59:60Z", datetime(2030, 6, 30, 23, 59, 59, tzinfo=UTC)),  # a leap second
        ("2030-01-02T03:04:05.123456789+00:00", datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        ("2030-01-02T03:04:05.5z", datetime(2030, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
        ("2030-01-02T03:04:05-00:00", datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)),  # the offset RFC 3339 leaves unknown
        ("2030-01-02T08:34:05+05:30", datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_every_rfc_3339_date_time_is_read(written: str, read: datetime) -> None:
    assert ZonedDateTimeField().to_internal_value(written) == read


# ISO 8601 forms that RFC 3339 (the document's `date-time`) does not allow, each refused as no date-time.
NOT_RFC_3339 = [
    "20301128T100000Z",  # the basic format
    "2030-W48-5T10:00:00Z",  # a week date
    "2030-332T10:00:00Z",  # an ordinal date
    "2030-11-28 10:00:00Z",  # a space for the T
    "2030-11-28T10:00:00.Z",  # a fraction without digits
    "2030-11-28T10:00:00,5Z",  # a comma before the fraction
    "2030-11-28T10:00Z",  # no seconds
    "2030-11-28T10Z",  # the hour alone
    "2030-11-28T10:00:00+0100",  # an offset without its colon
    "2030-11-28T10:00:00+01",  # an offset of hours alone
    "2030-11-28T10:00:00",  # no zone, as ever
    "2030-11-28",  # a date alone
    "2030-11-28T10:00:0\u0662Z",  # a digit, but not an ASCII one
]


@pytest.mark.parametrize("written", NOT_RFC_3339)
def test_a_date_time_rfc_3339_does_not_allow_is_refused(written: str) -> None:
    field = ZonedDateTimeField()
    field.bind("sendAt", None)

    with pytest.raises(ValidationError) as refusal:
        field.to_internal_value(written)

    assert refusal.value.detail == ["sendAt must be an ISO 8601 date-time"]


def test_a_send_at_rfc_3339_does_not_allow_is_a_400_for_a_single_send_and_a_batch_item(free: Client) -> None:
    in_a_day = _in(24 * 3600).astimezone(UTC)
    written = in_a_day.strftime("%G-W%V-%uT%H:%M:%SZ")  # a week date, a day ahead

    assert_error(free.send_webhook(sendAt=written), 400, "sendAt must be an ISO 8601 date-time")
    batch = free.post("/api/v1/notifications/webhook/batch", {"items": [{**WEBHOOK, "sendAt": written}]})
    assert batch.status_code == 202, batch.json()
    assert batch.json()["data"]["items"][0]["error"] == "sendAt must be an ISO 8601 date-time"
    assert not Job.objects.exists()


def test_an_offset_is_kept_as_the_same_instant(free: Client) -> None:
    local = _in(3600).astimezone(timezone.get_fixed_timezone(-300)).replace(microsecond=0)

    job = _schedule(free, local.isoformat())

    assert job.scheduled_for == local
    assert free.get(f"{JOBS}/{job.id}").json()["data"]["scheduledFor"] == iso_utc(local)


def test_the_quota_counts_a_scheduled_send_when_it_is_accepted(free: Client) -> None:
    _schedule(free, _in(3600))

    assert free.get("/api/v1/user/usage").json()["data"]["used"] == 1


def test_a_scheduled_send_can_be_cancelled_and_is_then_never_sent(free: Client, broker_messages: Messages) -> None:
    job = _schedule(free, _in(3600))

    assert free.post(f"{JOBS}/{job.id}/cancel").status_code == 200
    _come_due(job)

    assert jobs_dispatch() == 0
    assert broker_messages() == []
    assert Job.objects.get(id=job.id).error_message == "Cancelled"


def test_the_search_for_lost_tasks_passes_over_scheduled_sends(free: Client) -> None:
    scheduled = _schedule(free, _in(3600))
    now = timezone.now()

    # No task in the broker: a pending job published long ago lost its task; one scheduled for later has none yet.
    assert published_last_first(priorities=Priority.values, now=now, count=100) == []
    assert jobs_sweep() == 0
    assert Job.objects.get(id=scheduled.id).requeue_at == scheduled.requeue_at


@pytest.mark.usefixtures("worker")
def test_a_scheduled_webhook_goes_out_within_a_second_of_its_time(free: Client, receiver: Receiver) -> None:
    send_at = _in(2)
    job = _schedule(free, send_at, url=receiver.url("/hook"))

    while timezone.now() < send_at + timedelta(seconds=1.5):
        jobs_dispatch()  # what beat does every JOB_DISPATCH_INTERVAL_SECONDS
        time.sleep(0.2)

    arrived = receiver.wait_for(1)
    assert len(arrived) == 1
    assert wait_for_job(job.id).status == JobStatus.COMPLETED
    first_attempt = Job.objects.get(id=job.id).started_at
    assert first_attempt is not None
    assert send_at <= first_attempt < send_at + timedelta(seconds=1.5)


@pytest.mark.usefixtures("worker")
def test_a_send_scheduled_before_its_account_was_deactivated_is_not_sent(free: Client, receiver: Receiver) -> None:
    job = _schedule(free, _in(3600), url=receiver.url("/hook"))
    Account.objects.filter(pk=free.account.pk).update(is_active=False)
    _come_due(job)

    jobs_dispatch()

    failed = wait_for_job(job.id)
    assert (failed.status, failed.error_message) == ("failed", "Account is inactive")
    assert receiver.arrivals == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SKIP LOCKED: SQLite runs one writer at a time")
def test_two_dispatcher_runs_at_once_send_each_job_once(startup: Client) -> None:
    jobs = [_schedule(startup, _in(3600)) for _ in range(6)]
    for job in jobs:
        _come_due(job)
    due = Job.objects.filter(requeue_at__lte=timezone.now()).order_by("requeue_at")

    # Another run that has taken three rows and not yet moved them.
    with locked_elsewhere(due.select_for_update()[:3]) as taken_by_other:
        taken = take_due_for_requeue(now=timezone.now(), next_requeue_at=_in(300), batch_size=100)

    assert {job_id for job_id, *_ in taken} == {job.id for job in jobs} - {job.id for job in taken_by_other}
    assert len(taken) == 3
