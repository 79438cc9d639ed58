from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, F, Min, OuterRef, Prefetch, Q, QuerySet, Subquery, Value, When, Window
from django.db.models.functions import Coalesce, RowNumber
from django.utils import timezone
from psycopg import pq

from accounts.models import Account
from core import sql
from core.errors import JobNotFound
from core.paging import page_rows
from notifications.models import (
    Attachment,
    DailyTally,
    DeliveryLog,
    DeliveryStatus,
    DestinationHealth,
    Job,
    JobStatus,
    JobTag,
    JobType,
)
from notifications.secret_headers import mask_secret_headers, with_secret_headers

FINISHED = [JobStatus.COMPLETED, JobStatus.FAILED]
SLIM_FIELDS = [
    "id",
    "type",
    "status",
    "priority",
    "destination",
    "attempts",
    "error_message",
    "created_at",
    "completed_at",
    "scheduled_for",
    "test",
]


def idempotency_keys_taken(*, account: Account, keys: Collection[str], test: bool = False) -> set[str]:
    """Which of ``keys`` the account's stored jobs of mode ``test`` hold."""
    if not keys:
        return set()
    held = Job.objects.filter(account=account, test=test, idempotency_key__in=keys).values_list(
        "idempotency_key", flat=True
    )
    return {key for key in held if key is not None}


@dataclass(frozen=True)
class JobFilters:
    """Which of an account's jobs a list shows; every filter given must hold."""

    type: str | None = None
    status: str | None = None
    # An email's recipient, and a webhook URL's host: each compared without case, read from the job's destination.
    to: str | None = None
    host: str | None = None
    # One of an email's tags, as sent (case counts), read from its JobTag rows.
    tag: str | None = None

    def any(self) -> bool:
        return any(vars(self).values())


def parse_job_id(job_id: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(job_id)
    except ValueError:
        return None


def job_get(*, account: Account, job_id: str, test: bool = False) -> Job:
    """The caller's job with its delivery logs in attempt order and its email events.

    Another account's job is not found either, nor one of the other mode (docs/rules.md, "Test mode").
    """
    parsed_id = parse_job_id(job_id)
    logs = Prefetch("delivery_logs", queryset=DeliveryLog.objects.order_by("created_at", "attempt"))
    # The providers' reports on the job's email, oldest first (webhooks_inbound's EmailEvent ordering);
    # named through the reverse relation: that app builds on this one, not the other way round.
    job = (
        Job.objects.prefetch_related(logs, "email_events").filter(id=parsed_id, account=account, test=test).first()
        if parsed_id
        else None
    )
    if job is None:
        raise JobNotFound()
    return job


@dataclass(frozen=True)
class AttemptRound:
    """The attempts a job made between two Retry Jobs: ``number`` 1 is the first round, 2 the first after a retry."""

    number: int
    logs: list[DeliveryLog]


def attempt_rounds(job: Job) -> list[AttemptRound]:
    """The job's delivery logs (as `job_get` gives them, in time order) by round.

    Retry Job starts the attempts again at 0 and keeps the logs (docs/job-states.md, "Columns"), so a log whose
    attempt is not past the one before it starts a round; a job with logs but no attempt yet was retried since the
    last of them, and its round has none so far. None for a job that never made an attempt.
    """
    rounds: list[list[DeliveryLog]] = []
    for log in job.delivery_logs.all():
        if not rounds or log.attempt <= rounds[-1][-1].attempt:
            rounds.append([])
        rounds[-1].append(log)
    if rounds and job.attempts == 0:
        rounds.append([])
    return [AttemptRound(number=number, logs=logs) for number, logs in enumerate(rounds, start=1)]


def delivery_logs_by_job(job_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[DeliveryLog]]:
    """The delivery logs of each of ``job_ids``, in time order, in one query (a message's deliveries' attempts)."""
    logs: dict[uuid.UUID, list[DeliveryLog]] = {job_id: [] for job_id in job_ids}
    for log in DeliveryLog.objects.filter(job_id__in=job_ids).order_by("created_at", "attempt"):
        logs[log.job_id].append(log)
    return logs


def job_payload_for_owner(job: Job) -> dict[str, Any]:
    """The payload as the job's owner sent it: a webhook's secret header values decrypted back in place.

    Only for the owner's own reads (Get Job Status, by the holder's session or a key that may send); the stored
    payload has them masked.
    """
    if not job.secret_headers:
        return job.payload
    return {**job.payload, "headers": with_secret_headers(job.payload["headers"], job.secret_headers)}


def job_payload_for_staff(job: Job) -> dict[str, Any]:
    """The payload for staff's eyes, and a read key's: every secret header's value masked, a job stored before they
    were kept apart included (docs/rules.md, "Webhooks")."""
    headers = job.payload.get("headers")
    if not headers:
        return job.payload
    return {**job.payload, "headers": mask_secret_headers(headers)}


def _jobs_of(account: Account, filters: JobFilters, *, test: bool) -> QuerySet[Job]:
    """The account's jobs of mode ``test``, filtered, newest first, without payloads: what a list shows."""
    jobs = Job.objects.filter(account=account, test=test)
    if filters.type:
        jobs = jobs.filter(type=filters.type)
    if filters.status:
        jobs = jobs.filter(status=filters.status)
    if filters.to:
        jobs = jobs.filter(type=JobType.EMAIL, destination=filters.to.lower())
    if filters.host:
        jobs = jobs.filter(type=JobType.WEBHOOK, destination=filters.host.lower())
    if filters.tag:
        # The tag's rows lead: their (account, test, tag, created_at) index gives the jobs in the list's order, as
        # the destination's does for ``to``; a tag row's mode and created_at are its job's.
        tagged = jobs.filter(job_tags__account=account, job_tags__test=test, job_tags__tag=filters.tag)
        return tagged.only(*SLIM_FIELDS).order_by("-job_tags__created_at", "-id")
    return jobs.only(*SLIM_FIELDS).order_by("-created_at", "-id")


def job_list(
    *, account: Account, page: int, limit: int, filters: JobFilters = JobFilters(), test: bool = False
) -> tuple[list[Job], int]:
    """One page of the caller's jobs of its mode, newest first, and the total: two queries whatever the page size.

    A tag alone is counted on its own rows, one index range, as ``to`` is on the destination's: joined to the jobs,
    the database would read every job of the account to count a popular tag's.
    """
    counted = None
    if filters.tag and filters == JobFilters(tag=filters.tag):
        counted = JobTag.objects.filter(account=account, test=test, tag=filters.tag)
    return page_rows(_jobs_of(account, filters, test=test), page=page, limit=limit, counted=counted)


# LIMIT and OFFSET are 64-bit on PostgreSQL and SQLite.
LARGEST_ROW_NUMBER = 2**63 - 1


def job_page(*, account: Account, page: int, limit: int, filters: JobFilters = JobFilters()) -> tuple[list[Job], bool]:
    """One page of the holder's live jobs, newest first, and whether another follows: the dashboard's list.

    One query, reading one row past the page instead of counting: a count reads every matching
    index entry, which for an account with a million jobs is most of the page's time. A page
    past what the database can number is empty without asking it, which would refuse the number.
    """
    offset = (page - 1) * limit
    if offset + limit + 1 > LARGEST_ROW_NUMBER:
        return [], False
    jobs = list(_jobs_of(account, filters, test=False)[offset : offset + limit + 1])
    return jobs[:limit], len(jobs) > limit


def failed_jobs(
    *,
    account: Account | None = None,
    job_type: str | None = None,
    created_since: datetime | None = None,
    endpoint_id: uuid.UUID | None = None,
    test: bool | None = None,
) -> QuerySet[Job]:
    """Failed jobs of ``account``, or of every usable account (active, not deleted), optionally of one type,
    created since a moment, delivering to one app's endpoint (docs/customer-webhooks.md) or of one mode: what an
    operator's bulk retry, and an endpoint's recover, take up."""
    jobs = Job.objects.filter(status=JobStatus.FAILED)
    if endpoint_id is not None:
        jobs = jobs.filter(endpoint_id=endpoint_id)
    if test is not None:
        jobs = jobs.filter(test=test)
    if account is None:
        jobs = jobs.filter(account__is_active=True, account__deleted_at__isnull=True)
    else:
        jobs = jobs.filter(account=account)
    if job_type:
        jobs = jobs.filter(type=job_type)
    if created_since:
        jobs = jobs.filter(created_at__gte=created_since)
    return jobs


def finished_jobs(*, finished_before: datetime) -> QuerySet[Job]:
    """Jobs that completed or failed for good before ``finished_before``: what a purge deletes."""
    return Job.objects.filter(status__in=FINISHED, finished_at__lt=finished_before)


def owns_job(*, account: Account, job_id: uuid.UUID) -> bool:
    """Whether the job is one of the account's live jobs: the holder's, as the dashboard shows them."""
    return Job.objects.filter(id=job_id, account=account, test=False).exists()


def attachment_get(*, account: Account, job_id: uuid.UUID, position: int) -> Attachment | None:
    """The attachment at ``position`` of one of the account's live jobs, without its content, which the holder's
    download streams (notifications.attachments.attachment_content)."""
    attachments = Attachment.objects.filter(job_id=job_id, job__account=account, job__test=False, position=position)
    return attachments.defer("content").first()


# One slice of one attachment's content: substr counts from 1, in bytes, on PostgreSQL's bytea and SQLite's blob.
# Off the framework's road: docs/departures.md, "binary-attachment-read".
CONTENT_SLICE_SQL = f"""
    SELECT substr({sql.column(Attachment, "content")}, %s, %s) FROM {sql.table(Attachment)}
    WHERE {sql.column(Attachment, "job")} = %s AND {sql.column(Attachment, "position")} = %s
"""
# The most of a file one statement reads: libpq keeps its connection's input buffer at the largest result it has
# read, for the connection's life (bench/RESULTS.md, the attachments rows).
CONTENT_SLICE_BYTES = 1024 * 1024


def attachment_content(*, job_id: uuid.UUID, position: int, size: int) -> Iterator[bytes]:
    """The content of a job's attachment of ``size`` bytes, slice by slice, in PostgreSQL's binary format where
    the ORM reads text (a ``bytea`` in text is hex, twice its size): a delivery joins them, a download streams them.
    SQLite (the embedded mode) reads a blob as it is."""
    job = sql.db_value(Attachment, "job", job_id)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.cursor.format = pq.Format.BINARY  # psycopg's result format, for this cursor's statements
        for start in range(0, size, CONTENT_SLICE_BYTES):
            cursor.execute(CONTENT_SLICE_SQL, [start + 1, CONTENT_SLICE_BYTES, job, position])
            yield bytes(cursor.fetchone()[0])


@dataclass(frozen=True)
class DayOutcomes:
    day: date
    completed: int
    failed: int


def daily_outcomes(*, account: Account, days: int) -> list[DayOutcomes]:
    """Jobs completed and failed on each of the last ``days`` days (UTC, today included), oldest first.

    At most ``days`` DailyTally rows, read through their unique (account, day) index.
    """
    today = timezone.now().astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    tallies = DailyTally.objects.filter(account=account, day__gte=first).values_list("day", "completed", "failed")
    by_day = {day: (completed, failed) for day, completed, failed in tallies}
    return [
        DayOutcomes(day, *by_day.get(day, (0, 0))) for day in (first + timedelta(days=offset) for offset in range(days))
    ]


@dataclass(frozen=True)
class QueueState:
    pending: int
    # When the oldest pending job that was never tried was accepted: a retried job keeps its old created_at.
    oldest_untried_at: datetime | None


def queue_state() -> QueueState:
    """The jobs waiting for a worker, read in one statement for the metrics.

    Every unfinished job has a ``requeue_at`` (the sweeper's), so asking for one lets the partial
    index on it (``job_requeue_due``) read the unfinished jobs alone, not the whole table.
    """
    row = Job.objects.filter(requeue_at__isnull=False, status=JobStatus.PENDING).aggregate(
        pending=Count("id"), oldest_untried_at=Min("created_at", filter=Q(started_at__isnull=True))
    )
    return QueueState(pending=row["pending"], oldest_untried_at=row["oldest_untried_at"])


# How far back the endpoints page looks, and the longest a webhook job's attempts are spread (its retry delays are
# minutes): jobs created this much before the window may still have attempts in it.
HEALTH_WINDOW = timedelta(hours=24)
HEALTH_ATTEMPTS_SPREAD = timedelta(hours=1)


@dataclass(frozen=True)
class DestinationState:
    """How the account's webhooks to one destination host fared over the last 24 hours, and its streak now."""

    destination: str
    attempts: int
    succeeded: int
    median_ms: int | None
    health: DestinationHealth | None

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.attempts if self.attempts else None

    @property
    def failing(self) -> bool:
        """At ENDPOINT_FAILING_THRESHOLD failed attempts in a row or more."""
        return self.health is not None and self.health.consecutive_failures >= settings.ENDPOINT_FAILING_THRESHOLD


def destination_states(*, account: Account, now: datetime, page: int, limit: int) -> tuple[list[DestinationState], int]:
    """Page ``page`` of ``limit`` hosts the account's live webhooks went to in the last 24 hours, or that have a
    streak of failures now, failing ones first, then by attempts, most first (the dashboard's endpoints page), and
    how many there are: the same few queries however many hosts there are. A test job's attempts reached no host
    (docs/rules.md, "Test mode"), so they count nowhere here."""
    logs = _window_logs(account=account, since=now - HEALTH_WINDOW)
    rows, total = page_rows(_destination_figures(account=account, logs=logs), page=page, limit=limit)
    destinations = [row["destination"] for row in rows]
    streaks = {
        row.destination: row for row in DestinationHealth.objects.filter(account=account, destination__in=destinations)
    }
    medians = _medians_ms(logs, destinations)
    states = [
        DestinationState(
            row["destination"],
            row["attempts"],
            row["succeeded"],
            medians.get(row["destination"]),
            streaks.get(row["destination"]),
        )
        for row in rows
    ]
    return states, total


def _window_logs(*, account: Account, since: datetime) -> QuerySet[DeliveryLog]:
    """The attempts of the account's live webhook jobs in the window."""
    return DeliveryLog.objects.filter(
        job__account=account,
        job__type=JobType.WEBHOOK,
        job__test=False,
        job__created_at__gte=since - HEALTH_ATTEMPTS_SPREAD,
        created_at__gte=since,
    )


def _destination_figures(*, account: Account, logs: QuerySet[DeliveryLog]) -> QuerySet[Any, dict[str, Any]]:
    """One row per destination, in the page's order: the hosts attempted in the window with their counts, and the
    hosts with a streak but no attempt in the window, at none."""
    streak = DestinationHealth.objects.filter(account=account, destination=OuterRef("destination"))
    attempted = (
        logs.order_by()
        .values(destination=F("job__destination"))
        .annotate(
            attempts=Count("id"),
            succeeded=Count("id", filter=Q(status=DeliveryStatus.SUCCESS)),
            failures=Coalesce(Subquery(streak.values("consecutive_failures")[:1]), 0),
        )
    )
    idle = (
        DestinationHealth.objects.filter(account=account, failing_since__isnull=False)
        .exclude(destination__in=logs.values("job__destination"))
        .values("destination")
        .annotate(attempts=Value(0), succeeded=Value(0), failures=F("consecutive_failures"))
    )
    failing = Case(When(failures__gte=settings.ENDPOINT_FAILING_THRESHOLD, then=1), default=0)
    return (
        attempted.annotate(failing=failing)
        .union(idle.annotate(failing=failing), all=True)
        .order_by("-failing", "-attempts", "destination")
    )


def _medians_ms(logs: QuerySet[DeliveryLog], destinations: list[str]) -> dict[str, int | None]:
    """The middle duration of the attempts at each of ``destinations`` that has one (the lower middle of an even
    count), in one query."""
    destination = F("job__destination")
    ranked = logs.filter(job__destination__in=destinations, duration_ms__isnull=False).annotate(
        position=Window(RowNumber(), partition_by=destination, order_by=F("duration_ms").asc()),
        timed=Window(Count("id"), partition_by=destination),
    )
    middle = ranked.filter(position=(F("timed") + 1) / 2)
    return dict(middle.values_list("job__destination", "duration_ms"))
