"""`manage.py retryfailed`: failed jobs re-queued in batches with Retry Job's rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.models import Account
from accounts.plans import Plan
from accounts.selectors import usage_get
from accounts.services import account_delete, account_set_monthly_limit, provider_key_set, usage_consume
from notifications.models import DailyTally, DeliveryLog, Job, JobStatus, JobType
from tests.conftest import Client
from tests.factories import DeliveryLogFactory, FailedJobFactory, JobFactory
from tests.notifications.test_purge_jobs import FINISHED_LINE, interrupt_on_second_batch

EMAIL_PAYLOAD = {"to": "user@example.com", "subject": "Hi", "body": "<p>Hi</p>"}


def failed(account: Account, *, type: str = JobType.WEBHOOK, created_at: datetime | None = None) -> Job:
    """A job that failed for good a second after it was created, with its three attempts' logs."""
    created_at = created_at or timezone.now() - timedelta(hours=1)
    job = FailedJobFactory(
        account=account,
        type=type,
        payload=EMAIL_PAYLOAD if type == JobType.EMAIL else {"url": "https://hooks.example.com/in", "payload": {}},
        created_at=created_at,
        finished_at=created_at + timedelta(seconds=1),
        claims=3,
    )
    for attempt in (1, 2, 3):
        DeliveryLogFactory(job=job, attempt=attempt)
    return job


def retry(*args: str, stderr: StringIO | None = None) -> str:
    out = StringIO()
    call_command("retryfailed", *args, stdout=out, stderr=stderr or StringIO())
    return out.getvalue()


def statuses(*jobs: Job) -> list[str]:
    return [Job.objects.get(id=job.id).status for job in jobs]


def email_of(client: Client) -> str:
    return client.account.user.email


def test_it_requeues_every_failed_job_as_retry_job_does(
    free: Client,
    startup: Client,
    broker_messages: Callable[[], list[dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    jobs = [failed(free.account), failed(free.account), failed(startup.account)]
    day = jobs[0].finished_at.astimezone(UTC).date()  # type: ignore[union-attr]
    DailyTally.objects.create(account=free.account, day=day, completed=5, failed=2)

    with django_capture_on_commit_callbacks(execute=True):
        output = retry()

    assert output == "Re-queued 3 failed job(s).\n"
    for job in jobs:
        job.refresh_from_db()
        assert (job.status, job.attempts, job.claims, job.error_message, job.finished_at) == (
            JobStatus.PENDING,
            0,
            0,
            None,
            None,
        )
        assert job.requeue_at is not None
        assert job.requeue_at > timezone.now()
        assert DeliveryLog.objects.filter(job=job).count() == 3
    assert list(DailyTally.objects.values_list("completed", "failed")) == [(5, 0)]
    assert sorted(message["args"][0] for message in broker_messages()) == sorted(str(job.id) for job in jobs)


def test_other_jobs_are_left_alone(free: Client) -> None:
    completed = JobFactory(account=free.account, status=JobStatus.COMPLETED)
    pending = JobFactory(account=free.account, status=JobStatus.PENDING)
    waiting = JobFactory(account=free.account, status=JobStatus.PROCESSING, attempts=1)

    assert retry() == "Re-queued 0 failed job(s).\n"

    assert statuses(completed, pending, waiting) == [JobStatus.COMPLETED, JobStatus.PENDING, JobStatus.PROCESSING]


def test_type_since_and_account_narrow_what_is_requeued(free: Client, startup: Client) -> None:
    since = datetime(2026, 3, 10, tzinfo=UTC)
    picked = failed(free.account, created_at=since)
    email = failed(free.account, type=JobType.EMAIL, created_at=since + timedelta(days=1))
    before = failed(free.account, created_at=since - timedelta(seconds=1))
    elsewhere = failed(startup.account, created_at=since + timedelta(days=1))

    output = retry("--type", "webhook", "--since", "2026-03-10", "--account", email_of(free))

    assert output == "Re-queued 1 failed job(s).\n"
    assert statuses(picked, email, before, elsewhere) == [JobStatus.PENDING, *[JobStatus.FAILED] * 3]


def test_a_paid_accounts_email_without_a_provider_key_is_skipped_and_counted(
    make_client: Callable[..., Client],
) -> None:
    keyless = make_client(Plan.INDIE)
    with_key = make_client(Plan.INDIE)
    provider_key_set(account=with_key.account, provider="SENDGRID", api_key="sg-key")
    skipped = [failed(keyless.account, type=JobType.EMAIL) for _ in range(2)]
    webhook = failed(keyless.account)
    sendable = failed(with_key.account, type=JobType.EMAIL)

    output = retry()

    assert output == (
        "Re-queued 2 failed job(s).\n"
        "Skipped 2 email job(s) of paid accounts without a provider key: they could only fail again. "
        "Add a key to the account, then run this again.\n"
    )
    assert statuses(*skipped, webhook, sendable) == [JobStatus.FAILED] * 2 + [JobStatus.PENDING] * 2


def test_jobs_that_never_took_their_unit_take_it_all_or_stay_failed_and_counted(
    make_client: Callable[..., Client],
) -> None:
    client = make_client(Plan.FREE, monthly_limit=3)
    usage_consume(account=client.account)
    owing = [failed(client.account, type=JobType.EMAIL) for _ in range(3)]
    Job.objects.filter(id__in=[job.id for job in owing]).update(quota_taken=False)
    counted = failed(client.account)

    output = retry()

    assert output == (
        "Re-queued 1 failed job(s).\n"
        "Left 3 job(s) failed: they never took their quota unit, and their account's quota cannot cover them "
        '(docs/rules.md, "Retry Job"). Raise the account\'s limit, or wait for its next billing cycle.\n'
    )
    assert statuses(*owing, counted) == [JobStatus.FAILED] * 3 + [JobStatus.PENDING]
    assert usage_get(account=client.account).used == 1

    account_set_monthly_limit(account=client.account, limit=4)
    assert retry() == "Re-queued 3 failed job(s).\n"
    assert statuses(*owing) == [JobStatus.PENDING] * 3
    assert usage_get(account=client.account).used == 4


def test_the_jobs_of_inactive_and_deleted_accounts_stay_failed(make_client: Callable[..., Client]) -> None:
    inactive = make_client(is_active=False)
    deleted = make_client()
    account_delete(account=deleted.account)
    jobs = [failed(inactive.account), failed(deleted.account)]

    assert retry() == "Re-queued 0 failed job(s).\n"

    assert statuses(*jobs) == [JobStatus.FAILED] * 2
    with pytest.raises(CommandError, match=r"is inactive or deleted: its jobs stay failed$"):
        retry("--account", email_of(deleted))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--account", "ghost@example.com"], "No account for ghost@example.com"),
        (["--since", "yesterday"], "--since must be a day, YYYY-MM-DD, got 'yesterday'"),
        (["--since", "2026-02-30"], "--since must be a day, YYYY-MM-DD, got '2026-02-30'"),
        (["--type", "sms"], "argument --type: invalid choice: 'sms'"),
        (["--batch-size", "-1"], "argument --batch-size: must be 1 or more, got -1"),
    ],
)
def test_it_refuses_an_unknown_account_a_bad_day_or_type(free: Client, args: list[str], message: str) -> None:
    job = failed(free.account)

    with pytest.raises(CommandError, match=re.escape(message)):
        retry(*args)

    assert statuses(job) == [JobStatus.FAILED]


def test_progress_counts_the_jobs_requeued_and_skipped(make_client: Callable[..., Client]) -> None:
    keyless = make_client(Plan.STARTUP)
    for _ in range(3):
        failed(keyless.account, type=JobType.EMAIL)
    for _ in range(2):
        failed(keyless.account)
    stderr = StringIO()

    retry("--batch-size", "1", stderr=stderr)

    assert [FINISHED_LINE.match(line).groups() for line in stderr.getvalue().splitlines()] == [  # type: ignore[union-attr]
        ("5", "5", "100.0")
    ]


def test_an_interrupted_run_reports_what_it_requeued_and_a_second_run_requeues_the_rest(
    free: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # All on one UTC day, whatever the hour the test runs at: the tally below is that day's.
    noon_yesterday = (timezone.now() - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    jobs = [failed(free.account, created_at=noon_yesterday - timedelta(hours=hours)) for hours in range(7, 0, -1)]
    day = jobs[0].finished_at.astimezone(UTC).date()  # type: ignore[union-attr]
    DailyTally.objects.filter(account=free.account).delete()
    DailyTally.objects.create(account=free.account, day=day, completed=0, failed=7)
    interrupt_on_second_batch(monkeypatch)
    out = StringIO()

    with pytest.raises(CommandError, match=r"^Interrupted: run retryfailed again to re-queue the rest\.$") as stopped:
        call_command("retryfailed", "--batch-size", "3", stdout=out, stderr=StringIO())

    assert stopped.value.returncode == 130
    assert out.getvalue() == "Re-queued 6 failed job(s).\n"
    assert statuses(*jobs) == [JobStatus.PENDING] * 6 + [JobStatus.FAILED]
    monkeypatch.undo()
    assert retry() == "Re-queued 1 failed job(s).\n"
    assert statuses(*jobs) == [JobStatus.PENDING] * 7
    assert list(DailyTally.objects.values_list("failed", flat=True)) == [0]
