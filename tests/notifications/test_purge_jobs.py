"""Purging finished jobs: `manage.py purgejobs`, the daily retention task, and the service both share."""

from __future__ import annotations

import itertools
import logging
import re
import sys
from datetime import UTC, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Account
from core.progress import Progress
from notifications.models import Attachment, DailyTally, DeliveryLog, Job, JobStatus, JobTag, JobType
from notifications.services import finished_jobs_purge
from notifications.tasks import purge_jobs
from tests.conftest import Client, locked_elsewhere
from tests.factories import DeliveryLogFactory, JobFactory
from tests.test_deploy import run as run_with_environment
from webhooks_inbound.models import EmailEvent

FINISHED_LINE = re.compile(r"^(\d[\d,]*)/(\d[\d,]*) jobs \((\d+\.\d)%\) [\d,]+/s$")


class Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def finished_job(account: Account, *, days_ago: float, status: str = JobStatus.COMPLETED, logs: int = 3) -> Job:
    """A job that finished ``days_ago`` days ago, a few seconds after it was created, with its attempts' logs."""
    finished_at = timezone.now() - timedelta(days=days_ago)
    job = JobFactory(
        account=account, status=status, created_at=finished_at - timedelta(seconds=5), finished_at=finished_at
    )
    for attempt in range(1, logs + 1):
        DeliveryLogFactory(job=job, attempt=attempt)
    return job


def email_event(job: Job) -> EmailEvent:
    return EmailEvent.objects.create(
        account=job.account,
        job=job,
        provider="SENDGRID",
        type="delivered",
        recipient="user@example.com",
        occurred_at=timezone.now(),
        provider_event_id=f"evt-{job.id}",
        payload="{}",
    )


def purge(*args: str, stderr: StringIO | None = None) -> str:
    out = StringIO()
    call_command("purgejobs", *args, stdout=out, stderr=stderr or StringIO())
    return out.getvalue()


def remaining(account: Account) -> int:
    return Job.objects.filter(account=account).count()


def test_it_deletes_finished_jobs_older_than_the_cutoff_with_their_logs_and_events(free: Client) -> None:
    old = [
        finished_job(free.account, days_ago=40),
        finished_job(free.account, days_ago=35, status=JobStatus.FAILED),
    ]
    email_event(old[0])
    recent = finished_job(free.account, days_ago=29)
    email_event(recent)

    output = purge("--older-than", "30")

    assert re.fullmatch(
        r"Deleted 2 job\(s\) that finished before \d{4}-\d\d-\d\d \d\d:\d\d UTC, with 6 delivery logs, "
        r"1 email events\.\n",
        output,
    ), output
    assert list(Job.objects.values_list("id", flat=True)) == [recent.id]
    assert set(DeliveryLog.objects.values_list("job_id", flat=True)) == {recent.id}
    assert list(EmailEvent.objects.values_list("job_id", flat=True)) == [recent.id]


def test_it_deletes_the_tags_of_the_jobs_it_deletes_and_counts_them(free: Client) -> None:
    finished_at = timezone.now() - timedelta(days=40)
    payload = {"to": "user@example.com", "subject": "Receipt", "body": "<p>Thanks</p>", "tags": ["receipt", "eu"]}
    old = JobFactory(
        account=free.account,
        type=JobType.EMAIL,
        payload=payload,
        status=JobStatus.COMPLETED,
        created_at=finished_at - timedelta(seconds=5),
        finished_at=finished_at,
    )
    kept = JobFactory(account=free.account, type=JobType.EMAIL, payload={**payload, "tags": ["receipt"]})
    assert JobTag.objects.filter(job=old).count() == 2

    output = purge("--older-than", "30")

    assert output.startswith("Deleted 1 job(s) that finished before "), output
    assert output.endswith(" UTC, with 2 job tags.\n"), output
    assert list(JobTag.objects.values_list("job_id", "tag")) == [(kept.id, "receipt")]


def test_attachments_go_with_their_job_counted_and_never_loaded(free: Client) -> None:
    old, recent = finished_job(free.account, days_ago=40, logs=1), finished_job(free.account, days_ago=29, logs=1)
    for job in (old, old, recent):
        attachment_of(job)

    with CaptureQueriesContext(connection) as queries:
        output = purge("--older-than", "30")

    assert output.endswith(", with 2 attachments, 1 delivery logs.\n"), output
    assert list(Attachment.objects.values_list("job_id", flat=True)) == [recent.id]
    # Deleted by the jobs' ids in one statement a batch, without a read of their rows.
    touching = [query["sql"] for query in queries if Attachment._meta.db_table in query["sql"]]
    assert [statement.split()[0] for statement in touching] == ["DELETE"], touching


def attachment_of(job: Job) -> Attachment:
    position = Attachment.objects.filter(job=job).count()
    return Attachment.objects.create(
        job=job,
        position=position,
        filename="a.pdf",
        content_type="application/pdf",
        size=3,
        sha256="0" * 64,
        content=b"pdf",
    )


def test_unfinished_jobs_stay_however_old(free: Client) -> None:
    long_ago = timezone.now() - timedelta(days=400)
    pending = JobFactory(account=free.account, status=JobStatus.PENDING, created_at=long_ago)
    waiting = JobFactory(account=free.account, status=JobStatus.PROCESSING, created_at=long_ago, attempts=1)
    DeliveryLogFactory(job=waiting, attempt=1)

    assert purge("--older-than", "1").startswith("Deleted 0 job(s)")

    assert set(Job.objects.values_list("id", flat=True)) == {pending.id, waiting.id}
    assert DeliveryLog.objects.filter(job=waiting).count() == 1


def test_a_job_created_long_ago_that_finished_lately_stays(free: Client) -> None:
    retried = JobFactory(
        account=free.account,
        status=JobStatus.COMPLETED,
        created_at=timezone.now() - timedelta(days=200),
        finished_at=timezone.now() - timedelta(days=2),
    )

    purge("--older-than", "30")

    assert list(Job.objects.values_list("id", flat=True)) == [retried.id]


def test_the_daily_figures_stay(free: Client) -> None:
    job = finished_job(free.account, days_ago=100, status=JobStatus.FAILED)
    day = job.finished_at.astimezone(UTC).date()  # type: ignore[union-attr]
    DailyTally.objects.create(account=free.account, day=day, completed=4, failed=1)

    purge("--older-than", "90")

    assert remaining(free.account) == 0
    assert list(DailyTally.objects.values_list("day", "completed", "failed")) == [(day, 4, 1)]


def test_it_purges_every_account_in_batches(free: Client, startup: Client) -> None:
    for client in (free, startup):
        for days_ago in range(31, 38):
            finished_job(client.account, days_ago=days_ago, logs=1)
    kept = finished_job(startup.account, days_ago=1)

    output = purge("--older-than", "30", "--batch-size", "3")

    assert output.startswith("Deleted 14 job(s)")
    assert remaining(free.account) == 0
    assert list(Job.objects.values_list("id", flat=True)) == [kept.id]


def test_the_oldest_go_first_a_day_at_a_time_across_accounts(free: Client, startup: Client) -> None:
    finished_job(free.account, days_ago=40)
    newest = finished_job(free.account, days_ago=35)
    between = finished_job(startup.account, days_ago=38)
    batches = finished_jobs_purge(finished_before=timezone.now() - timedelta(days=30))

    left_after_each_batch = [set(Job.objects.values_list("id", flat=True)) for _ in batches]

    assert left_after_each_batch == [{between.id, newest.id}, {newest.id}, set()]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "-3"], "argument --older-than: must be 1 or more, got -3"),
        (["--older-than", "0"], "argument --older-than: must be 1 or more, got 0"),
        (["--older-than", "soon"], "argument --older-than: must be a whole number, got 'soon'"),
        ([], "the following arguments are required: --older-than"),
        (["--older-than", "30", "--batch-size", "0"], "argument --batch-size: must be 1 or more, got 0"),
    ],
)
def test_it_refuses_anything_but_a_positive_number_of_days(free: Client, args: list[str], message: str) -> None:
    finished_job(free.account, days_ago=400)

    with pytest.raises(CommandError, match=re.escape(message)):
        purge(*args)

    assert remaining(free.account) == 1


def test_progress_goes_to_stderr_a_line_every_ten_batches_when_not_a_terminal(free: Client) -> None:
    for hour in range(25):
        finished_job(free.account, days_ago=31 + hour / 30, logs=0)
    stderr = StringIO()

    purge("--older-than", "30", "--batch-size", "2", stderr=stderr)

    lines = stderr.getvalue().splitlines()
    counts = [FINISHED_LINE.match(line).groups() for line in lines]  # type: ignore[union-attr]
    assert counts == [("20", "25", "80.0"), ("25", "25", "100.0")]


def test_progress_is_redrawn_in_place_on_a_terminal(free: Client) -> None:
    for hour in range(5):
        finished_job(free.account, days_ago=31 + hour / 24, logs=0)
    stderr = Terminal()

    purge("--older-than", "30", "--batch-size", "2", stderr=stderr)

    text = stderr.getvalue()
    assert text.endswith("\n")
    assert text.count("\n") == 1
    frames = [frame.removesuffix("\x1b[K\n").removesuffix("\x1b[K") for frame in text.split("\r")[1:]]
    assert [FINISHED_LINE.match(frame).group(1) for frame in frames] == ["2", "4", "5", "5"]  # type: ignore[union-attr]


def test_the_bar_counts_rate_and_share_from_its_clock() -> None:
    stderr, ticks = Terminal(), iter([100.0, 102.0, 104.0])
    progress = Progress(OutputWrapper(stderr), total=1_000_000, noun="jobs", clock=lambda: next(ticks))

    progress.advance(6_800)
    progress.advance(5_200)

    assert stderr.getvalue().split("\r")[1:] == [
        "6,800/1,000,000 jobs (0.7%) 3,400/s\x1b[K",
        "12,000/1,000,000 jobs (1.2%) 3,000/s\x1b[K",
    ]


def interrupt_on_second_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the progress bar counts the second batch, which is committed by then."""
    advance, calls = Progress.advance, itertools.count(1)

    def advance_then_interrupt(self: Progress, count: int) -> None:
        advance(self, count)
        if next(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(Progress, "advance", advance_then_interrupt)


def test_an_interrupted_purge_reports_what_it_deleted_and_a_second_run_deletes_the_rest(
    free: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = [finished_job(free.account, days_ago=31 + hour / 24, logs=2) for hour in range(7)]
    kept = finished_job(free.account, days_ago=3)
    out = StringIO()
    interrupt_on_second_batch(monkeypatch)

    with pytest.raises(CommandError, match=r"^Interrupted: run purgejobs again to delete the rest\.$") as stopped:
        call_command("purgejobs", "--older-than", "30", "--batch-size", "3", stdout=out, stderr=StringIO())

    assert stopped.value.returncode == 130
    assert out.getvalue().startswith("Deleted 6 job(s)")
    # The batches go by creation, oldest first: what is left is the newest of the old.
    assert set(Job.objects.values_list("id", flat=True)) == {old[0].id, kept.id}
    monkeypatch.undo()
    assert purge("--older-than", "30").startswith("Deleted 1 job(s)")
    assert list(Job.objects.values_list("id", flat=True)) == [kept.id]
    assert set(DeliveryLog.objects.values_list("job_id", flat=True)) == {kept.id}


def test_the_service_stopped_between_batches_leaves_the_rest_for_the_next_run(free: Client) -> None:
    for hour in range(10):
        finished_job(free.account, days_ago=31 + hour / 24, logs=1)
    cutoff = timezone.now() - timedelta(days=30)

    first = [batch.jobs for batch in itertools.islice(finished_jobs_purge(finished_before=cutoff, batch_size=4), 1)]
    assert remaining(free.account) == 6
    second = [batch.jobs for batch in finished_jobs_purge(finished_before=cutoff, batch_size=4)]

    assert (first, second) == ([4], [4, 2])
    assert remaining(free.account) == 0
    assert DeliveryLog.objects.count() == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_job_another_transaction_holds_is_skipped_not_waited_for(free: Client) -> None:
    held, other = (finished_job(free.account, days_ago=days_ago, logs=1) for days_ago in (50, 51))
    with locked_elsewhere(Job.objects.select_for_update().filter(id=held.id)):
        assert purge("--older-than", "30").startswith("Deleted 1 job(s)")
        assert list(Job.objects.values_list("id", flat=True)) == [held.id]
    assert purge("--older-than", "30").startswith("Deleted 1 job(s)")
    assert not Job.objects.filter(id__in=[held.id, other.id]).exists()


def test_the_retention_task_deletes_what_finished_more_than_the_set_days_ago(
    free: Client, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.JOB_RETENTION_DAYS = 30
    finished_job(free.account, days_ago=31)
    finished_job(free.account, days_ago=60, status=JobStatus.FAILED)
    kept = finished_job(free.account, days_ago=29)

    with caplog.at_level(logging.INFO, logger="notifications.tasks"):
        assert purge_jobs() == 2

    assert list(Job.objects.values_list("id", flat=True)) == [kept.id]
    assert "Retention: deleted 2 job(s) that finished more than 30 days ago" in caplog.messages


def test_the_retention_task_keeps_everything_when_retention_is_off(free: Client, settings: Any) -> None:
    settings.JOB_RETENTION_DAYS = 0
    finished_job(free.account, days_ago=3000)

    assert purge_jobs() == 0

    assert remaining(free.account) == 1


def test_beat_runs_the_retention_task_daily() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["purge-jobs"]

    assert entry["task"] == purge_jobs.name == "notifications.purge_jobs"
    assert (entry["schedule"].hour, entry["schedule"].minute) == ({3}, {30})


PRINT_RETENTION = "import django; django.setup(); from django.conf import settings; print(settings.JOB_RETENTION_DAYS)"


@pytest.mark.parametrize(
    ("environment", "days"),
    [
        ({}, "90"),
        ({"JOB_RETENTION_DAYS": ""}, "0"),
        ({"JOB_RETENTION_DAYS": "0"}, "0"),
        ({"JOB_RETENTION_DAYS": "14"}, "14"),
    ],
)
def test_retention_is_90_days_unless_set_and_zero_or_empty_turns_it_off(
    tmp_path: Path, environment: dict[str, str], days: str
) -> None:
    printed = run_with_environment([sys.executable, "-c", PRINT_RETENTION], tmp_path, **environment)

    assert printed.stdout.strip() == days, printed.stderr


def test_a_negative_retention_stops_start_up(tmp_path: Path) -> None:
    printed = run_with_environment([sys.executable, "-c", PRINT_RETENTION], tmp_path, JOB_RETENTION_DAYS="-1")

    assert printed.returncode != 0
    assert "JOB_RETENTION_DAYS must be at least 0, got -1" in printed.stderr
