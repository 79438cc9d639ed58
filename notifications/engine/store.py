"""Every write to a job row: insert, claim, record an attempt, requeue, delete (docs/job-states.md).

One function per operation, each a conditional statement, so two workers, or a worker and a
late duplicate task, can never both win. The claim is one ``UPDATE ... RETURNING`` on every
database. Where PostgreSQL does in one statement what elsewhere takes a transaction (storing
a job while taking its quota unit, recording an attempt while checking the lease), that
statement lives here beside the general form; the suite runs it on PostgreSQL in CI. Every
statement is built from the models' own metadata, never from another module's SQL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any, TypeVar
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, DateTimeField, F, Model, Q, QuerySet, Value, When
from django.utils import timezone

from accounts.models import Account, SigningSecret, UsagePeriod
from accounts.selectors import current_period
from accounts.services import usage_consume
from core import sql
from core.errors import DuplicateRequest, QuotaExceeded
from notifications.engine.transitions import NextState
from notifications.models import (
    Attachment,
    DailyTally,
    DeliveryLog,
    DeliveryStatus,
    DestinationHealth,
    Job,
    JobAnnouncement,
    JobStatus,
    JobTag,
    JobType,
)
from notifications.quota import owes_unit
from suppressions.models import Suppression

UNFINISHED = [JobStatus.PENDING, JobStatus.PROCESSING]
TALLY_FIELDS = ("account", "day", "completed", "failed")
# A JobAnnouncement's: the job, then the columns of the state it finished in (NextState's names).
ANNOUNCEMENT_FIELDS = ("job", "status", "attempts", "error_message", "finished_at")
NEXT_STATE_COLUMNS = tuple(field.name for field in fields(NextState))
# An app's endpoint (customer_webhooks, an app above this one) as the job's foreign key reaches it: the engine reads
# and writes the few columns its deliveries need, by name, never importing the app (docs/customer-webhooks.md).
Endpoint: type[Model] = Job._meta.get_field("endpoint").related_model  # type: ignore[assignment]
# What the claim reads of a message delivery's endpoint, beside its signing secrets.
ENDPOINT_CLAIMED = ("url", "url_credentials", "rate_limit", "disabled", "failing_since")


@dataclass(frozen=True)
class EndpointTarget:
    """A message delivery's endpoint as it is at the claim: where the attempt goes, and whether it may go."""

    id: UUID
    url: str
    url_credentials: str | None
    rate_limit: int | None
    disabled: bool
    failing_since: datetime | None


@dataclass(frozen=True)
class Claim:
    """A job taken for one attempt, with what its delivery needs from its account."""

    job: Job
    # The encrypted secrets that sign now, newest first: none, the secret, or the secret and the one a rotation
    # replaced while that still signs. The account's (accounts/models.py), or for a message's delivery its endpoint's
    # and never the account's (docs/customer-webhooks.md).
    encrypted_signing_secrets: tuple[str, ...]
    # Whether the account may still send: active and not deleted, as the API decides (Account.is_usable).
    account_usable: bool
    # Why an email's recipient is on the account's suppression list, or None (docs/suppressions.md).
    suppressed_for: str | None
    # Whether the job's end is announced: its account has event endpoints (Account.has_event_endpoints), and the
    # job is live (a test job announces nothing, docs/rules.md, "Test mode").
    emits_events: bool
    # A webhook's failed attempts in a row at its destination before this one (DestinationHealth); 0 for an email.
    failure_streak: int
    # A message's delivery: its endpoint as it is now; None for every other job.
    endpoint: EndpointTarget | None = None


# Off the framework's road: docs/departures.md, "raw-sql-job-store".
def insert(job: Job) -> None:
    """Stores a new job and, when it counts (``quota_taken``, notifications/quota.py), takes a unit of its account's
    quota: both or neither.

    The insert comes before the quota so the unique index, not a read-then-write, answers a
    duplicate key, and a duplicate costs no quota. Raises DuplicateRequest, or the account's
    QuotaExceeded, which takes the inserted row back out with its transaction.
    """
    # In a caller's transaction a duplicate must only undo this job's statements: a savepoint. A job with tags or
    # attachments writes their rows in the job's own transaction; one without is still the one statement.
    atomic = connection.in_atomic_block or bool(job.payload.get("tags") or job.new_attachments)
    with _duplicate_answered(job), transaction.atomic() if atomic else nullcontext():
        _insert_taking_its_unit(job)


def _insert_taking_its_unit(job: Job) -> None:
    """The job's row and, if ``quota_taken``, its unit: both or neither, in one statement where the database can;
    then the rows it keeps beside it, if it has any. A caller with those holds a transaction."""
    if not (job.quota_taken and _insert_with_unit_in_one_statement(job)):
        with transaction.atomic():
            job.save(force_insert=True)
            if job.quota_taken:
                usage_consume(account=job.account)
    _insert_beside([job])


def _insert_beside(jobs: Sequence[Job]) -> None:
    """The rows new jobs keep beside them, their tags' and their attachments', in the caller's transaction."""
    _insert_tags(jobs)
    _insert_attachments(jobs)


def _insert_tags(jobs: Sequence[Job]) -> None:
    """The JobTag rows of ``jobs``' tags, each tag once per job: no statement for jobs without tags."""
    rows = [
        JobTag(job=job, account_id=job.account_id, tag=tag, test=job.test, created_at=job.created_at)
        for job in jobs
        for tag in dict.fromkeys(job.payload.get("tags") or ())
    ]
    if rows:
        JobTag.objects.bulk_create(rows)


@dataclass(frozen=True)
class ArrivalFailure:
    """A new job that must not go out at all (an email to a suppressed address, docs/suppressions.md): stored
    failed in ``failure``, with ``log``, the one attempt it counts, which made no request; never queued. It takes
    its quota unit like every accepted job: a unit not taken would let a Retry Job after the removal send for free."""

    job: Job
    failure: NextState
    log: DeliveryLog

    @classmethod
    def of(cls, job: Job, *, error: str) -> ArrivalFailure:
        now = timezone.now()
        log = DeliveryLog(job=job, attempt=1, status=DeliveryStatus.FAILED, error_message=error, created_at=now)
        failure = NextState.failed(attempts=1, at=now, error=error)
        for name, value in failure.columns().items():
            setattr(job, name, value)
        return cls(job, failure, log)


def insert_failed(arrival: ArrivalFailure, *, announced: bool) -> None:
    """Stores a job that fails on arrival with its quota unit as `insert` takes it, its log, its day's tally and,
    when ``announced``, its JobAnnouncement: all or none. Raises DuplicateRequest or QuotaExceeded as `insert`
    does."""
    with _duplicate_answered(arrival.job), transaction.atomic():
        _insert_taking_its_unit(arrival.job)
        arrival.log.save(force_insert=True)
        _count_finished(arrival.job, arrival.failure, announced=announced)


def insert_batch(
    jobs: Sequence[Job], *, arrivals: Sequence[ArrivalFailure], announced: bool, savepoint: bool = True
) -> None:
    """Stores a batch of one account's new jobs, ``arrivals``' among them, and takes a unit of its quota for each
    that counts (``quota_taken``): all or none, in one transaction, the jobs in one multi-row INSERT (on PostgreSQL
    the statement that takes their units too), their tags and their attachments in one more each.

    The INSERT comes first, as in `insert`: a key taken meanwhile raises IntegrityError before the quota's row is
    locked, and the caller checks its keys again. Raises the account's QuotaExceeded otherwise.

    ``savepoint`` False: the caller's own transaction is all or none already, and it ends with any error raised here
    (a message's, customer_webhooks.messages.message_send), so no savepoint is paid for (two statements).
    """
    with transaction.atomic(savepoint=savepoint):
        _insert_taking_units(jobs)
        _insert_beside(jobs)
        DeliveryLog.objects.bulk_create([arrival.log for arrival in arrivals])
        for arrival in arrivals:
            _count_finished(arrival.job, arrival.failure, announced=announced)


def _insert_taking_units(jobs: Sequence[Job]) -> None:
    """The jobs' rows in one multi-row INSERT and a unit of their account's quota for each that counts, in the
    caller's transaction: on PostgreSQL one statement, the quota's UPDATE inside its WITH. When that took no units
    (the period's usage row missing or too full) the general path takes them: it creates the row, or raises
    QuotaExceeded, whose transaction takes the rows back out."""
    units = sum(job.quota_taken for job in jobs)
    if not units or sql.default_connection().vendor != "postgresql":
        Job.objects.bulk_create(jobs)
    elif _insert_with_units_in_one_statement(jobs, units):
        return
    if units:
        usage_consume(account=jobs[0].account, units=units)


# Off the framework's road: docs/departures.md, "raw-sql-job-store".
def _insert_with_units_in_one_statement(jobs: Sequence[Job], units: int) -> bool:
    """PostgreSQL: the jobs' rows, and ``units`` of their account's quota if that many are left, in one statement;
    True if the units were taken. The rows are written either way."""
    account = jobs[0].account
    period_start, _ = current_period(account)
    unit = [
        units,
        account.pk,
        sql.db_value(UsagePeriod, "period_start", period_start),
        account.limits.monthly_quota - units,
    ]
    with sql.default_connection().cursor() as cursor:
        cursor.execute(_insert_taking_units_sql(), [*unit, *sql.unnest_values(*jobs)])
        (taken,) = cursor.fetchone()
    for job in jobs:
        job._state.adding = False  # stored, as bulk_create leaves a row it wrote
    return bool(taken)


@cache
def _insert_taking_units_sql() -> str:
    # usage_consume's rule for several units: taken only while used + units <= the plan's quota. The INSERT runs
    # whether the UPDATE took them or not (a WITH's statements all run); the caller then takes the general path. The
    # rows come as one array a column: one text and 34 parameters for any number of rows (core/sql.py).
    used, account, period_start = (sql.column(UsagePeriod, name) for name in ("used", "account", "period_start"))
    return f"""
        WITH unit AS (
            UPDATE {sql.table(UsagePeriod)} SET {used} = {used} + %s
            WHERE {account} = %s AND {period_start} = %s AND {used} <= %s RETURNING 1
        ), stored AS (
            INSERT INTO {sql.table(Job)} ({sql.columns(Job)})
            SELECT * FROM {sql.unnest_columns(Job)}
        )
        SELECT count(*) FROM unit
    """


def _insert_attachments(jobs: Sequence[Job]) -> None:
    """The new jobs' attachments (Job.new_attachments), in the caller's transaction; no statement when none has."""
    if rows := [row for job in jobs for row in job.new_attachments]:
        Attachment.objects.bulk_create(rows)


@contextmanager
def _duplicate_answered(job: Job) -> Iterator[None]:
    """A second job under the same idempotency key, refused by the unique index, is the client's DuplicateRequest."""
    try:
        yield
    except IntegrityError:
        if job.idempotency_key is None:
            raise
        raise DuplicateRequest() from None


def _insert_with_unit_in_one_statement(job: Job) -> bool:
    """PostgreSQL: the job and its quota unit in one statement; True if both were written.

    False when nothing was written: the period's usage row is missing or full (`insert` then
    takes the general path, which creates the row or answers 409 before 403), or the database
    cannot update inside a WITH (SQLite).
    """
    db = sql.default_connection()
    if db.vendor != "postgresql":
        return False
    period_start, _ = current_period(job.account)
    unit = [job.account.pk, sql.db_value(UsagePeriod, "period_start", period_start), job.account.limits.monthly_quota]
    with db.cursor() as cursor:
        cursor.execute(_insert_taking_unit_sql(), [*unit, *sql.insert_values(job)])
        return cursor.rowcount == 1


@cache
def _insert_taking_unit_sql() -> str:
    # The same rule as usage_consume's: a unit is taken only while used < the plan's quota.
    used, account, period_start = (sql.column(UsagePeriod, name) for name in ("used", "account", "period_start"))
    return f"""
        WITH unit AS (
            UPDATE {sql.table(UsagePeriod)} SET {used} = {used} + 1
            WHERE {account} = %s AND {period_start} = %s AND {used} < %s RETURNING 1
        )
        INSERT INTO {sql.table(Job)} ({sql.columns(Job)})
        SELECT {sql.placeholders(Job)} WHERE EXISTS (SELECT 1 FROM unit)
    """


def claim(*, job_id: UUID, now: datetime, lease_until: datetime, claimable_until: datetime) -> Claim | None:
    """Takes the job for one attempt, pending or processing, unless it is locked beyond ``claimable_until`` (an
    attempt under way, a retry or a scheduled send not yet due).

    One statement claims the row and returns it with the account's encrypted signing secrets, whether the account
    may still send, for an email why its recipient is suppressed (for every email, or for the email's topic),
    whether the account has event endpoints, the failed attempts in a row at the job's destination, and for a
    message's delivery its endpoint as it is now (URL, secrets, rate limit, disabled, failing since): the attempt
    asks the database nothing more.
    The secrets come as one text, space-separated, from one read of their row: a Fernet token is URL-safe base64,
    which holds no space.
    Should this worker die, the sweeper re-sends the task once the lease is over.
    """
    params = [
        JobStatus.PROCESSING,
        sql.db_value(Job, "started_at", now),
        sql.db_value(Job, "locked_until", lease_until),
        sql.db_value(Job, "requeue_at", lease_until),
        sql.db_value(Job, "id", job_id),
        JobStatus.PENDING,
        JobStatus.PROCESSING,
        sql.db_value(Job, "locked_until", claimable_until),
        sql.db_value(SigningSecret, "previous_signs_until", now),
        JobType.EMAIL,
        JobType.WEBHOOK,
        sql.db_value(Endpoint, "previous_signs_until", now),
    ]
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql(), params)
        row = cursor.fetchone()
    if row is None:
        return None
    job_width = len(Job._meta.concrete_fields)
    job = sql.from_row(Job, row[:job_width])
    account_secrets, account_usable, suppressed_for, emits_events, failure_streak, *endpoint_columns = row[job_width:]
    endpoint = _endpoint_target(job, endpoint_columns)
    # A message's delivery is signed with its endpoint's secrets alone: without them, unsigned, never the account's.
    encrypted_signing_secrets = endpoint_columns[-1] if job.endpoint_id else account_secrets
    return Claim(
        job=job,
        encrypted_signing_secrets=tuple((encrypted_signing_secrets or "").split()),
        account_usable=bool(account_usable),
        suppressed_for=suppressed_for,
        emits_events=bool(emits_events) and not job.test,
        failure_streak=failure_streak or 0,
        endpoint=endpoint,
    )


def _endpoint_target(job: Job, endpoint_columns: Sequence[Any]) -> EndpointTarget | None:
    """The claimed delivery's endpoint from the claim's last columns (ENDPOINT_CLAIMED, then its secrets); None for
    a job that is no message's delivery, or whose endpoint was deleted meanwhile (its delivery goes with it)."""
    *columns, _ = endpoint_columns
    if job.endpoint_id is None or columns[0] is None:
        return None
    endpoint = sql.from_row(Endpoint, columns, fields=ENDPOINT_CLAIMED)
    return EndpointTarget(job.endpoint_id, *(getattr(endpoint, name) for name in ENDPOINT_CLAIMED))


@cache
def _claim_sql() -> str:
    jobs, secrets, accounts = sql.table(Job), sql.table(SigningSecret), sql.table(Account)
    job_id, status, started_at, locked_until, next_attempt_at, requeue_at, claims, owner = (
        sql.column(Job, name)
        for name in ("id", "status", "started_at", "locked_until", "next_attempt_at", "requeue_at", "claims", "account")
    )
    secret, secret_owner = sql.column(SigningSecret, "encrypted_secret"), sql.column(SigningSecret, "account")
    previous, previous_until = (
        sql.column(SigningSecret, name) for name in ("previous_encrypted_secret", "previous_signs_until")
    )
    account_id, is_active = sql.column(Account, "id"), sql.column(Account, "is_active")
    deleted_at = sql.column(Account, "deleted_at")
    suppressions, reason = sql.table(Suppression), sql.column(Suppression, "reason")
    suppressed_owner, suppressed_address = sql.column(Suppression, "account"), sql.column(Suppression, "email")
    suppressed_topic, job_topic = sql.column(Suppression, "topic"), sql.column(Job, "topic")
    job_type, destination = sql.column(Job, "type"), sql.column(Job, "destination")
    has_event_endpoints = sql.column(Account, "has_event_endpoints")
    health, failures = sql.table(DestinationHealth), sql.column(DestinationHealth, "consecutive_failures")
    health_owner, health_destination = (sql.column(DestinationHealth, name) for name in ("account", "destination"))
    return f"""
        UPDATE {jobs}
        SET {status} = %s, {started_at} = COALESCE({started_at}, %s), {locked_until} = %s, {next_attempt_at} = NULL,
            {requeue_at} = %s, {claims} = {claims} + 1
        WHERE {job_id} = %s AND {status} IN (%s, %s) AND ({locked_until} IS NULL OR {locked_until} <= %s)
        RETURNING {sql.columns(Job)},
            (SELECT {secrets}.{secret} || CASE WHEN {secrets}.{previous_until} > %s THEN ' ' || {secrets}.{previous}
                                                   ELSE '' END
             FROM {secrets} WHERE {secrets}.{secret_owner} = {jobs}.{owner}),
            (SELECT {accounts}.{is_active} AND {accounts}.{deleted_at} IS NULL
             FROM {accounts} WHERE {accounts}.{account_id} = {jobs}.{owner}),
            (SELECT {suppressions}.{reason} FROM {suppressions}
             WHERE {suppressions}.{suppressed_owner} = {jobs}.{owner}
               AND {suppressions}.{suppressed_address} = {jobs}.{destination} AND {jobs}.{job_type} = %s
               AND ({suppressions}.{suppressed_topic} IS NULL OR {suppressions}.{suppressed_topic} = {jobs}.{job_topic})
             ORDER BY {suppressions}.{suppressed_topic} IS NULL DESC LIMIT 1),
            (SELECT {accounts}.{has_event_endpoints} FROM {accounts} WHERE {accounts}.{account_id} = {jobs}.{owner}),
            (SELECT {health}.{failures} FROM {health}
             WHERE {health}.{health_owner} = {jobs}.{owner} AND {health}.{health_destination} = {jobs}.{destination}
               AND {jobs}.{job_type} = %s),
            {_claimed_endpoint_sql()}
    """


def _claimed_endpoint_sql() -> str:
    """The claim's columns of a message delivery's endpoint, ENDPOINT_CLAIMED then its secrets as the account's are
    read: one lookup by primary key each, none for a job without an endpoint (its key is null)."""
    jobs, endpoints = sql.table(Job), sql.table(Endpoint)
    delivered_to, endpoint_id = sql.column(Job, "endpoint"), sql.column(Endpoint, "id")
    secret, previous, previous_until = (
        sql.column(Endpoint, name) for name in ("encrypted_secret", "previous_encrypted_secret", "previous_signs_until")
    )
    this_endpoint = f"FROM {endpoints} WHERE {endpoints}.{endpoint_id} = {jobs}.{delivered_to}"
    claimed = [f"(SELECT {endpoints}.{sql.column(Endpoint, name)} {this_endpoint})" for name in ENDPOINT_CLAIMED]
    secrets = f"""(SELECT {endpoints}.{secret} || CASE WHEN {endpoints}.{previous_until} > %s
                                                   THEN ' ' || {endpoints}.{previous} ELSE '' END {this_endpoint})"""
    return ",\n            ".join([*claimed, secrets])


def renew_lease(model: type[Model], row_id: UUID, *, held_until: datetime | None, until: datetime) -> bool:
    """Moves the end of a claim's lease, and the sweeper's time with it, to ``until``; False if the lease that ends
    at ``held_until`` is no longer the row's (it ran out and another worker claimed it). ``model``: Job, or an event
    delivery's (event_endpoints), whose statuses are spelt as a job's."""
    held = model._default_manager.filter(id=row_id, status=JobStatus.PROCESSING, locked_until=held_until)
    return held.update(locked_until=until, requeue_at=until) == 1


def mark_unpublished(rows: QuerySet[Any], *, publish_at: datetime) -> None:
    """The tasks of ``rows`` (jobs, or event deliveries) did not reach the broker: the sweeper publishes them on its
    first tick from ``publish_at``, instead of when their requeue time would have come."""
    rows.filter(status__in=UNFINISHED, requeue_at__gt=publish_at).update(requeue_at=publish_at)


def put_back(job: Job, *, waiting: NextState) -> bool:
    """Hands the claimed job back, unattempted, to wait in ``waiting`` (NextState.paced), its claim not counted:
    a claim that made no attempt is no worker's death (docs/job-states.md). False, with nothing written, when the
    lease this claim took is no longer the job's."""
    still_ours = Job.objects.filter(id=job.id, status=JobStatus.PROCESSING, locked_until=job.locked_until)
    return still_ours.update(claims=F("claims") - 1, **waiting.columns()) == 1


def endpoint_failing_since(endpoint_id: UUID, *, since: datetime | None) -> None:
    """Starts (``since``) or ends (None) the endpoint's run of failed attempts; a run already so is left as it is."""
    changing = Endpoint._default_manager.filter(id=endpoint_id, failing_since__isnull=since is not None)
    changing.update(failing_since=since)


def endpoint_disable(endpoint_id: UUID, *, reason: str) -> dict[str, Any] | None:
    """Disables an enabled endpoint for ``reason``; its URL, id and app's id and uid, or None if it was disabled
    already (or is gone): only the statement that disables it says so."""
    enabled = Endpoint._default_manager.filter(id=endpoint_id, disabled=False)
    if not enabled.update(disabled=True, disabled_reason=reason):
        return None
    return Endpoint._default_manager.filter(id=endpoint_id).values("id", "url", "app_id", "app__uid").first()


def record_attempt(job: Job, *, next_state: NextState, log: DeliveryLog, announced: bool = False) -> bool:
    """Moves the claimed job to ``next_state`` and stores its log row, both or neither; a job that ``next_state``
    finishes is counted in its day's DailyTally in the same transaction and, when ``announced``, gets its
    JobAnnouncement there too.

    False, with nothing written, when the lease this claim took is no longer the job's.
    """
    if connection.vendor == "postgresql":
        tally = _tally_values(job, next_state)
        announcement = _announcement_values(job, next_state) if announced and tally else []
        return _record_attempt_in_one_statement(
            job, next_state=next_state, log=log, tally=tally, announcement=announcement
        )
    still_ours = Job.objects.filter(id=job.id, status=JobStatus.PROCESSING, locked_until=job.locked_until)
    with transaction.atomic():
        if not still_ours.update(**next_state.columns()):
            return False
        log.save(force_insert=True)
        if next_state.finished:
            _count_finished(job, next_state, announced=announced)
        return True


def _count_finished(job: Job, finished: NextState, *, announced: bool) -> None:
    """In the caller's transaction: ``job``, which ``finished`` finishes, counted in its day's DailyTally and, when
    ``announced``, given its JobAnnouncement (what `_record_attempt_sql` does in its statement). A test job is in no
    day's figures (`_tally_values`)."""
    if tally := _tally_values(job, finished):
        with connection.cursor() as cursor:
            cursor.execute(_tally_sql("WHERE true"), tally)
    if announced:
        JobAnnouncement(job=job, **_announced_state(finished)).save(force_insert=True)


def _tally_values(job: Job, next_state: NextState) -> list[Any]:
    """The parameters of `_tally_sql` when ``next_state`` finishes a live job, else none."""
    if next_state.finished_at is None or job.test:
        return []
    completed = next_state.status == JobStatus.COMPLETED
    day = sql.db_value(DailyTally, "day", utc_day(next_state.finished_at))
    return [job.account_id, day, int(completed), int(not completed)]


def utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


@cache
def _tally_sql(source: str) -> str:
    """Adds one job to its account's day, creating the day's row: ``source`` ends the SELECT of the values.

    Without a table to select from, ``source`` is ``WHERE true``: SQLite reads ON CONFLICT after a bare SELECT as a
    join's ON, and the WHERE ends the SELECT.
    """
    tally = sql.table(DailyTally)
    account, day, completed, failed = (sql.column(DailyTally, field) for field in TALLY_FIELDS)
    return f"""
        INSERT INTO {tally} ({account}, {day}, {completed}, {failed}) SELECT {sql.in_list(len(TALLY_FIELDS))} {source}
        ON CONFLICT ({account}, {day}) DO UPDATE
        SET {completed} = {tally}.{completed} + EXCLUDED.{completed}, {failed} = {tally}.{failed} + EXCLUDED.{failed}
    """


def _record_attempt_in_one_statement(
    job: Job, *, next_state: NextState, log: DeliveryLog, tally: list[Any], announcement: list[Any]
) -> bool:
    lease = [sql.db_value(Job, "id", job.id), JobStatus.PROCESSING, sql.db_value(Job, "locked_until", job.locked_until)]
    with connection.cursor() as cursor:
        cursor.execute(
            _record_attempt_sql(tallied=bool(tally), announced=bool(announcement)),
            [*sql.set_values(Job, next_state.columns()), *lease, *tally, *announcement, *sql.insert_values(log)],
        )
        return cursor.rowcount == 1


@cache
def _record_attempt_sql(*, tallied: bool, announced: bool) -> str:
    # The tally's row lock is taken last and held only until this statement commits.
    tally = f", tallied AS ({_tally_sql('FROM still_ours')})" if tallied else ""
    announcement = f", announced AS ({_announcement_sql()})" if announced else ""
    job_id, status, locked_until = (sql.column(Job, name) for name in ("id", "status", "locked_until"))
    return f"""
        WITH still_ours AS (
            UPDATE {sql.table(Job)} SET {sql.set_clause(Job, NEXT_STATE_COLUMNS)}
            WHERE {job_id} = %s AND {status} = %s AND {locked_until} = %s RETURNING 1
        ){tally}{announcement}
        INSERT INTO {sql.table(DeliveryLog)} ({sql.columns(DeliveryLog)})
        SELECT {sql.placeholders(DeliveryLog)} FROM still_ours
    """


def _announced_state(finished: NextState) -> dict[str, Any]:
    """The columns of the state a JobAnnouncement keeps, in ANNOUNCEMENT_FIELDS' order after the job."""
    return {name: getattr(finished, name) for name in ANNOUNCEMENT_FIELDS[1:]}


def _announcement_values(job: Job, finished: NextState) -> list[Any]:
    """The parameters of `_announcement_sql`, in ANNOUNCEMENT_FIELDS' order."""
    state = [sql.db_value(JobAnnouncement, name, value) for name, value in _announced_state(finished).items()]
    return [sql.db_value(JobAnnouncement, "job", job.id), *state]


def _announcement_sql() -> str:
    columns = ", ".join(sql.column(JobAnnouncement, name) for name in ANNOUNCEMENT_FIELDS)
    values = sql.in_list(len(ANNOUNCEMENT_FIELDS))
    return f"INSERT INTO {sql.table(JobAnnouncement)} ({columns}) SELECT {values} FROM still_ours"


def take_due_for_requeue(
    *, now: datetime, next_requeue_at: datetime, batch_size: int
) -> Sequence[tuple[UUID, int, datetime | None]]:
    """Unfinished jobs whose requeue time has passed, as (id, priority, locked_until), each pushed to
    ``next_requeue_at``; a retry made due ahead of its time (too far off to count down, docs/delivery-engine.md,
    "The dispatcher") to that time + JOB_RETRY_GRACE_SECONDS instead, as a retry whose task went out at its record."""
    unfinished = Job.objects.filter(status__in=UNFINISHED)
    fields = ("id", "priority", "locked_until")
    pushed = requeue_pushed(now=now, next_requeue_at=next_requeue_at)
    return take_due(unfinished, *fields, now=now, next_requeue_at=pushed, batch_size=batch_size)


def requeue_pushed(*, now: datetime, next_requeue_at: datetime) -> Case:
    """Where a row taken due moves its requeue time: to ``next_requeue_at``; a retry made due ahead of its time
    (``processing``, locked until then) to that time + JOB_RETRY_GRACE_SECONDS. A job's or an event delivery's."""
    grace = timedelta(seconds=settings.JOB_RETRY_GRACE_SECONDS)
    retry_ahead = When(status=JobStatus.PROCESSING, locked_until__gt=now, then=F("locked_until") + grace)
    return Case(retry_ahead, default=Value(next_requeue_at), output_field=DateTimeField())


def take_due(
    unfinished: QuerySet[Any], *fields: str, now: datetime, next_requeue_at: datetime | Case, batch_size: int
) -> list[tuple[Any, ...]]:
    """The rows of ``unfinished`` whose requeue time has passed, oldest first, as ``fields`` (the primary key
    first), each pushed to ``next_requeue_at`` (a time, or an expression of the row): jobs, or event deliveries
    (event_endpoints).

    Two runs at once (a dispatcher tick that outlasts its interval, the sweeper's) take different rows: each locks
    the rows it takes until it has moved them, and passes over those another holds.
    """
    waiting = unfinished.filter(requeue_at__lte=now).order_by("requeue_at").select_for_update(skip_locked=True)
    with transaction.atomic():
        due = list(waiting.values_list(*fields)[:batch_size])
        if due:
            unfinished.filter(pk__in=[row[0] for row in due]).update(requeue_at=next_requeue_at)
    return due


def published_last_first(*, priorities: Sequence[int], now: datetime, count: int) -> list[UUID]:
    """The first ``count`` jobs of ``priorities`` whose task is out, last published first (a job's requeue time is
    its publication plus JOB_REQUEUE_AFTER_SECONDS): pending, or processing with its lease over and published again
    (its worker died in the attempt). A scheduled send is not published before its time, nor a retry before it is
    due: only the jobs whose time has come have a task."""
    due = Job.objects.filter(
        Q(locked_until__isnull=True) | Q(locked_until__lte=now), status__in=UNFINISHED, priority__in=priorities
    )
    return list(due.filter(requeue_at__gt=now).order_by("-requeue_at").values_list("id", flat=True)[:count])


def bring_forward_unqueued(job_ids: Sequence[UUID], *, published_before: datetime, now: datetime) -> int:
    """The pending ones of ``job_ids`` (jobs whose task is not in the broker's queue) published before
    ``published_before`` are due for the sweeper at ``now``; returns how many. Published since, a worker may have
    taken the task and not yet claimed the job (it claims within milliseconds)."""
    requeue_before = published_before + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)
    unqueued = Job.objects.filter(id__in=job_ids, status=JobStatus.PENDING, requeue_at__lt=requeue_before)
    return unqueued.update(requeue_at=now)


def cancel_pending(*, account: Account, job_id: UUID, test: bool, cancelled: NextState, announced: bool) -> Job | None:
    """Moves the account's job of mode ``test`` to ``cancelled`` (failed, no attempt made) if it is still pending,
    counted in its day's DailyTally and, when ``announced``, announced; None, with nothing written, if it is not.

    A worker's claim takes only pending jobs too, by one conditional statement as this one: whichever commits first
    wins, and the other finds the job no longer pending.
    """
    with transaction.atomic():
        pending = Job.objects.filter(id=job_id, account=account, test=test, status=JobStatus.PENDING)
        if not pending.update(**cancelled.columns()):
            return None
        job = Job.objects.get(id=job_id)
        _count_finished(job, cancelled, announced=announced)
    return job


def requeue_failed(*, account: Account, job_id: UUID, requeue_at: datetime) -> Job | None:
    """Puts the account's failed job back to pending, attempts from zero, logs kept; None if it is not failed.
    Raises the account's QuotaExceeded, with nothing written, when the job owes its unit and none is left."""
    requeued = requeue_failed_jobs(account=account, job_ids=[job_id], requeue_at=requeue_at)
    if requeued.quota_refusal is not None:
        raise requeued.quota_refusal
    if not requeued.jobs:
        return None
    return Job.objects.get(id=job_id)


@dataclass(frozen=True)
class Requeued:
    """What `requeue_failed_jobs` did: the jobs it put back, as (id, priority), and those it left failed because
    the quota could not cover the units they owe, with the quota's refusal."""

    jobs: list[tuple[UUID, int]]
    over_quota: int = 0
    quota_refusal: QuotaExceeded | None = None


def requeue_failed_jobs(*, account: Account, job_ids: Sequence[UUID], requeue_at: datetime) -> Requeued:
    """Puts the account's failed jobs among ``job_ids`` back to pending, as `requeue_failed` does each one. The
    others (not failed, not the account's) are left alone.

    A job that counts against the quota and took no unit when it was stored (quota.owes_unit) takes it now, in the
    same transaction: the units the jobs owe are taken all or none, and when the quota cannot cover them those jobs
    stay failed (Requeued.over_quota). Each live job requeued leaves its day's failed count: it finishes again, and
    is counted then. A retry sends now: a cancelled scheduled send's time is cleared with the rest of its state.
    """
    failed = Job.objects.filter(id__in=job_ids, account=account, status=JobStatus.FAILED)
    with transaction.atomic():
        # Locked in one order, so two runs over the same jobs wait for each other instead of deadlocking.
        locked = failed.select_for_update().order_by("id").only(*REQUEUE_READS)
        jobs = [_of_account(job, account) for job in locked]
        owing = [job.id for job in jobs if owes_unit(job)]
        refusal = _units_taken(account, owing)
        if refusal is not None:
            jobs = [job for job in jobs if job.id not in owing]
        if jobs:
            _requeue(account, jobs, requeue_at=requeue_at)
        if owing and refusal is None:
            Job.objects.filter(id__in=owing).update(quota_taken=True)
    requeued = [(job.id, job.priority) for job in jobs]
    return Requeued(requeued, over_quota=len(owing) if refusal else 0, quota_refusal=refusal)


# What requeue_failed_jobs reads of each job: its task's priority, the day it failed on, whether it owes its unit.
REQUEUE_READS = ("id", "account", "priority", "finished_at", "test", "type", "quota_taken")


def _of_account(job: Job, account: Account) -> Job:
    """``job``, a job of ``account``, given the account already loaded: the quota's rule reads its plan."""
    job.account = account
    return job


def _units_taken(account: Account, owing: Sequence[UUID]) -> QuotaExceeded | None:
    """Takes a unit of the account's quota for each job ``owing`` it, all or none; the quota's refusal when it
    cannot, having taken nothing."""
    if not owing:
        return None
    try:
        usage_consume(account=account, units=len(owing))
    except QuotaExceeded as refusal:
        return refusal
    return None


def _requeue(account: Account, jobs: Sequence[Job], *, requeue_at: datetime) -> None:
    # The claims count within an attempt (docs/job-states.md, "Columns"): they start again with the attempts.
    requeued = NextState.requeued(requeue_at=requeue_at)
    Job.objects.filter(id__in=[job.id for job in jobs]).update(claims=0, scheduled_for=None, **requeued.columns())
    failed_on = Counter(utc_day(job.finished_at) for job in jobs if job.finished_at and not job.test)
    for day, count in failed_on.items():
        DailyTally.objects.filter(account=account, day=day).update(failed=F("failed") - count)


# Where a walk through jobs in creation order has got to: the last (created_at, id) it handled.
Position = tuple[datetime, UUID]


# Rows walked in creation order: jobs, and any model with a ``created_at`` and a UUID ``id`` (an app's messages).
Walked = TypeVar("Walked", bound=Model)


def walk_from(jobs: QuerySet[Walked], position: Position | None) -> QuerySet[Walked]:
    """``jobs`` in creation order from just past ``position``.

    The range on created_at lets the walk start where the last batch ended on an index of the
    account's jobs (the one by account, status and creation), so it never steps again over
    entries it has handled, deleted ones included; the id orders jobs created in the same instant.
    """
    if position is not None:
        created_at, job_id = position
        jobs = jobs.filter(created_at__gte=created_at).exclude(created_at=created_at, id__lte=job_id)
    return jobs.order_by("created_at", "id")


def delete_batch(jobs: QuerySet[Job], *, position: Position | None, size: int) -> tuple[list[Position], Counter[str]]:
    """Deletes the next ``size`` of ``jobs`` after ``position``, in one transaction, with the rows that hang off
    them: delivery logs, tags, attachments (by the jobs' ids, their content never read) and, through their reverse
    relations, rows of apps that build on this one (provider events). Returns the positions deleted, in order, and
    the rows deleted per model label.

    Rows another transaction holds (a Retry Job under way) are skipped, not waited for: a later run takes them.
    Every job selected is locked until it is deleted, so none can change state in between.
    """
    with transaction.atomic():
        locked = walk_from(jobs, position).select_for_update(skip_locked=True).values_list("created_at", "id")[:size]
        batch = list(locked)
        if not batch:
            return [], Counter()
        # Django's deletion collector loads the jobs (their ids alone suffice) and deletes the rows under them
        # with one statement per relation, without loading those.
        _, deleted = Job.objects.filter(id__in=[job_id for _, job_id in batch]).only("id").delete()
    return batch, Counter(deleted)
