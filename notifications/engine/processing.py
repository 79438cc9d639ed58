"""Processing jobs: claim, attempt, record, sweep (docs/delivery-engine.md).

The database is the source of truth. A task only names a job; whoever claims it with a
conditional UPDATE delivers it, so duplicate or replayed tasks are harmless, and the
sweeper re-sends tasks the broker lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.authentication import INACTIVE_ACCOUNT_MESSAGE
from accounts.selectors import signing_secrets_decrypt
from core import tracing
from core.logs import log_context
from core.unavailable import DATABASE_FAULTS
from notifications.delivery.email import deliver_email
from notifications.delivery.http import stored_url
from notifications.delivery.outcome import AttemptOutcome
from notifications.delivery.webhook import deliver_webhook
from notifications.engine import store
from notifications.engine.app_endpoints import endpoint_attempt_record, endpoint_stop, seconds_to_turn
from notifications.engine.health import destination_health_record
from notifications.engine.lease import Lease, LeasedT, lease_length, renewer
from notifications.engine.queue import dispatch_lead, dispatched_at, job_enqueue, jobs_enqueue, queued_deliveries
from notifications.engine.transitions import NextState
from notifications.models import DeliveryLog, DeliveryStatus, Job, JobType, Priority
from notifications.observability import attempt_recorded
from notifications.outcomes import finished_jobs_announce_soon, finished_jobs_left_waiting
from suppressions.services import suppressed_message

logger = logging.getLogger(__name__)

RecordedT = TypeVar("RecordedT")

# A retry task may run a moment before its due time by the database's clock.
CLAIM_TOLERANCE = timedelta(seconds=1)
# A worker claims a job within milliseconds of taking its task: a job still pending this long after its task
# went out, and older than every task in the queue, lost its task.
PUBLISHED_AND_UNCLAIMED = timedelta(seconds=5)
# Past this many queued tasks the search for lost ones (which reads as many jobs) is not made: in
# such a backlog a lost task is re-sent at its job's requeue time.
LOST_TASK_SEARCH_MAX_QUEUE = 10_000
# A record that the database refused is tried again after these pauses, doubling, while the lease lasts.
RECORD_RETRY_FIRST_PAUSE = 0.25
RECORD_RETRY_MAX_PAUSE = 2.0
# A job's wait for its next claim longer than this (a retry's delay, a delivery's wait for its endpoint's turn) is not
# sent as a countdown but left to the dispatcher (docs/delivery-engine.md, "The dispatcher").
COUNTDOWN_MAX_SECONDS = 5
# A job whose attempt was under way when a worker died this often fails instead of trying again:
# the job itself may be what kills the worker (a crash in a library, memory running out).
WORKER_DEATHS_ALLOWED = 3


def _seconds(name: str) -> timedelta:
    return timedelta(seconds=getattr(settings, name))


# A task whose claim met a database that did not answer runs again after 1, 2, ... seconds, at most this.
CLAIM_RETRY_MAX_SECONDS = 5


class ClaimUnavailable(Exception):
    """The database could not be asked for the job: nothing was claimed or sent, the task should run again."""


def job_process(*, job_id: UUID) -> None:
    """Runs one attempt of the job if this worker can claim it; otherwise does nothing.

    Raises ClaimUnavailable when the database cannot be reached for the claim.
    """
    try:
        claim = job_claim(job_id=job_id)
    except DATABASE_FAULTS as error:
        connection.close()  # the next task reconnects instead of finding this connection broken
        raise ClaimUnavailable(str(error)) from error
    if claim is None:
        return
    job = claim.job
    attempt = job.attempts + 1
    stopped = _stopped(claim)
    if stopped is None and claim.endpoint is not None and (wait := seconds_to_turn(job, claim.endpoint)):
        _wait_for_turn(job, seconds=wait)
        return
    with (
        log_context(attempt=attempt),
        renewer.held(job, partial(store.renew_lease, Job, job.id)) as lease,
    ):
        started = time.monotonic()
        outcome = stopped or _traced_attempt(claim, attempt=attempt)
        seconds = time.monotonic() - started
        job_status = _record_within_lease(lease, outcome, emits_events=claim.emits_events)
    if job_status is None:
        return
    attempt_recorded(job, attempt=attempt, outcome=outcome, job_status=job_status, seconds=seconds)
    # A test job's attempt reached no destination: its health is not the job's to tell.
    if job.type == JobType.WEBHOOK and stopped is None and not job.test:
        _health_record(claim, outcome)


def _health_record(claim: store.Claim, outcome: AttemptOutcome) -> None:
    """The attempt counted at its destination (engine/health.py) and, for a message's delivery, at its endpoint
    (engine/app_endpoints.py); a database that does not answer costs the count."""
    job = claim.job
    try:
        destination_health_record(job, outcome, failure_streak=claim.failure_streak)
        if claim.endpoint is not None:
            endpoint_attempt_record(job, claim.endpoint, outcome)
    except DATABASE_FAULTS as error:
        connection.close()
        logger.warning("Job %s: its destination's health not counted: %s", job.id, error)


def _wait_for_turn(job: Job, *, seconds: float) -> None:
    """Hands the claimed delivery back, unattempted, until its endpoint's rate limit gives it its turn: this worker
    goes on to other deliveries (docs/customer-webhooks.md, "Rate limit"). A short wait's task is sent for then; a
    longer one is left to the dispatcher."""
    turn = timezone.now() + timedelta(seconds=seconds)
    sent_counted_down = counted_down(seconds)
    # Counted down: pending and published, as far as the sweeper can tell, at its turn, so were its task lost the
    # sweeper's search for lost tasks finds it 5 s after (docs/delivery-engine.md, "The sweeper").
    requeue_at = turn + _seconds("JOB_REQUEUE_AFTER_SECONDS") if sent_counted_down else dispatched_at(turn)
    waiting = NextState.paced(turn, attempts=job.attempts, error=job.error_message, requeue_at=requeue_at)
    try:
        put_back = store.put_back(job, waiting=waiting)
    except DATABASE_FAULTS as error:
        # The lease ends and the sweeper sends the task again; the turn is asked for again then.
        connection.close()
        logger.warning("Job %s: not handed back for its turn, its lease will end: %s", job.id, error)
        return
    if put_back and sent_counted_down:
        # On the broker's first step: a worker takes it at once, ahead of the queue, and holds it until its turn, so
        # other deliveries queued meanwhile do not make it late.
        job_enqueue(job_id=job.id, priority=Priority.HIGH, countdown=seconds)


def counted_down(seconds: float) -> bool:
    """Whether a job's wait of ``seconds`` for its next claim is sent as its task's countdown; a longer one is left
    to the dispatcher (`queue.dispatched_at`). A worker holds a countdown's task in its memory until it is due, and the
    Redis transport hands an unacknowledged task to another worker again after its visibility timeout (an hour), so
    neither a slow limit's backlog nor a retry hours away is held there. The dispatcher's own countdown, its lead,
    is always within it."""
    return seconds <= max(COUNTDOWN_MAX_SECONDS, dispatch_lead().total_seconds())


def _stopped(claim: store.Claim) -> AttemptOutcome | None:
    """The failure of a job that must not be delivered at all, no request made; None when it may be tried."""
    job = claim.job
    if stop := worker_deaths_stop(claims=job.claims, attempts=job.attempts):
        logger.error("Job %s: %s", job.id, stop.error_message)
        return stop
    if not claim.account_usable:
        # A deleted or deactivated account sends nothing, queued before or not; Retry Job sends it once restored.
        logger.info("Job %s: not delivered, account %s is inactive", job.id, job.account_id)
        return AttemptOutcome.failure(INACTIVE_ACCOUNT_MESSAGE, retryable=False)
    if claim.endpoint is not None and (disabled := endpoint_stop(claim.endpoint)):
        logger.info("Job %s: not delivered, endpoint %s is disabled", job.id, claim.endpoint.id)
        return disabled
    if reason := claim.suppressed_for:
        # Suppressed while the job waited, or since it was retried: no provider hears of it (docs/suppressions.md).
        logger.info("Job %s: not delivered, the recipient is on the suppression list (%s)", job.id, reason)
        return AttemptOutcome.failure(suppressed_message(reason), retryable=False)
    return None


def _record_within_lease(lease: Lease[Job], outcome: AttemptOutcome, *, emits_events: bool) -> str | None:
    return record_within_lease(
        lease,
        lambda: job_record_attempt(job=lease.job, outcome=outcome, emits_events=emits_events),
        name=f"Job {lease.job.id}",
    )


def record_within_lease(lease: Lease[LeasedT], record: Callable[[], RecordedT], *, name: str) -> RecordedT | None:
    """Runs ``record``, the attempt's record, trying again while the database cannot be reached (a restart, a
    failover) and the lease lasts: the attempt has happened, and recording it is what keeps it from happening twice.
    None when the lease ran out first. ``name`` names the row in the log ("Job <id>").
    """
    pause = RECORD_RETRY_FIRST_PAUSE
    while True:
        try:
            with lease.lock:
                recorded = record()
                lease.ended = True
                return recorded
        except DATABASE_FAULTS as error:
            connection.close()
            if not _lease_outlasts(lease, pause):
                logger.error("%s: attempt not recorded, the database did not answer within its lease: %s", name, error)
                return None
            logger.warning("%s: could not record the attempt, trying again in %.1fs: %s", name, pause, error)
            time.sleep(pause)
            pause = min(pause * 2, RECORD_RETRY_MAX_PAUSE)


def _lease_outlasts(lease: Lease[LeasedT], pause: float) -> bool:
    return timezone.now() + timedelta(seconds=pause) < lease.until


def worker_deaths_stop(*, claims: int, attempts: int) -> AttemptOutcome | None:
    """The failure of an attempt that workers died during WORKER_DEATHS_ALLOWED times, else None. Nothing records a
    worker's death: the earlier claims of the attempt that never recorded it are what tells (this claim is the
    last one). A job's and an event delivery's alike."""
    if claims - attempts - 1 < WORKER_DEATHS_ALLOWED:
        return None
    message = f"Stopped: a worker died {WORKER_DEATHS_ALLOWED} times during this attempt"
    return AttemptOutcome.failure(message, retryable=False)


def job_claim(*, job_id: UUID) -> store.Claim | None:
    """Takes the job for one attempt if it is pending or processing, and no lock holds it (a lease, a retry or a
    scheduled send not yet due)."""
    now = timezone.now()
    return store.claim(job_id=job_id, now=now, lease_until=now + lease_length(), claimable_until=now + CLAIM_TOLERANCE)


def _traced_attempt(claim: store.Claim, *, attempt: int) -> AttemptOutcome:
    """The attempt, its attributes on the current span when traces are on (docs/observability.md, "Traces"): the
    worker's task span, the HTTP call to the receiver or each provider tried below it. The job's attributes go on
    before the attempt, so that one that raises still names its job; the outcome's after. No span of its own: the
    task span is the attempt's (docs/observability.md, "What it costs")."""
    attributes_set = tracing.current_span_attributes_set
    if attributes_set is None:
        return _attempt(claim, attempt=attempt)
    job = claim.job
    attributes_set({"notifyhub.job.id": str(job.id), "notifyhub.job.type": job.type, "notifyhub.attempt": attempt})
    outcome = _attempt(claim, attempt=attempt)
    attributes_set(_span_outcome(outcome))
    return outcome


def _span_outcome(outcome: AttemptOutcome) -> dict[str, str | int]:
    fields: dict[str, str | int | None] = {
        "notifyhub.attempt.outcome": "success" if outcome.delivered else "failed",
        "notifyhub.provider": outcome.used_provider,
        "http.response.status_code": outcome.response_status,
    }
    return {name: value for name, value in fields.items() if value is not None}


def _attempt(claim: store.Claim, *, attempt: int) -> AttemptOutcome:
    job = claim.job
    try:
        if job.type == JobType.WEBHOOK:
            secrets = signing_secrets_decrypt(*claim.encrypted_signing_secrets)
            endpoint = claim.endpoint
            endpoint_url = stored_url(endpoint.url, endpoint.url_credentials) if endpoint else None
            return deliver_webhook(job, attempt=attempt, signing_secrets=secrets, endpoint_url=endpoint_url)
        return deliver_email(job, attempt=attempt)
    except Exception:
        # A bug must not leave the job stuck or show a stack trace to the client.
        logger.exception("Delivery of job %s crashed", job.id)
        return AttemptOutcome.failure("Internal error while delivering; will retry", retryable=True)


def _retry_delay(outcome: AttemptOutcome, *, attempt: int, max_attempts: int, delays: Sequence[int]) -> int | None:
    """Seconds until the next attempt, or None when the attempts are over: the configured delay, or the
    receiver's Retry-After when that asks for longer (docs/delivery-engine.md, "Retry-After")."""
    if not outcome.retryable or attempt >= max_attempts:
        return None
    configured = delays[min(attempt, len(delays)) - 1] if delays else 0
    return max(configured, outcome.retry_after_seconds or 0)


def _next_state(job: Job, *, attempt: int, outcome: AttemptOutcome, now: datetime) -> NextState:
    return next_state_after(outcome, attempt=attempt, max_attempts=job.max_attempts, delays=_delays(job), now=now)


def _delays(job: Job) -> Sequence[int]:
    """The job's retry delays: a message's delivery waits for customers' endpoints that are down for hours
    (docs/customer-webhooks.md, "Retries")."""
    if job.message_id is not None:
        return settings.MESSAGE_RETRY_DELAYS
    return settings.WEBHOOK_RETRY_DELAYS if job.type == JobType.WEBHOOK else settings.EMAIL_RETRY_DELAYS


def next_state_after(
    outcome: AttemptOutcome, *, attempt: int, max_attempts: int, delays: Sequence[int], now: datetime
) -> NextState:
    """Where attempt number ``attempt`` leaves its row: completed, failed for good, or waiting ``delays`` for the
    next of ``max_attempts``. A job's and an event delivery's (event_endpoints) alike.

    A retry counted down (`counted_down`) is due for the dispatcher JOB_RETRY_GRACE_SECONDS after its time, should
    its task be lost; one too far off is due for it ahead of its time instead, and published then: no task is sent
    for it at its record (`job_record_attempt`; an event delivery's dispatcher is event_endpoints' sweep).
    """
    if outcome.delivered:
        return NextState.completed(attempts=attempt, at=now)
    delay = _retry_delay(outcome, attempt=attempt, max_attempts=max_attempts, delays=delays)
    if delay is None:
        return NextState.failed(attempts=attempt, at=now, error=outcome.error_message)
    due = now + timedelta(seconds=delay)
    requeue_at = due + _seconds("JOB_RETRY_GRACE_SECONDS") if counted_down(delay) else dispatched_at(due)
    return NextState.retry_at(due, attempts=attempt, error=outcome.error_message, requeue_at=requeue_at)


def job_record_attempt(*, job: Job, outcome: AttemptOutcome, emits_events: bool = False) -> str | None:
    """Writes the attempt's log and the job's next state, if this worker still holds the lease; with
    ``emits_events`` (the account has event endpoints), a job that this attempt finishes is to be announced, and
    that is written with them (notifications/outcomes.py).

    Returns the job's status after the attempt, or None when the lease was lost and nothing was written.
    """
    attempt = job.attempts + 1
    now = timezone.now()
    next_state = _next_state(job, attempt=attempt, outcome=outcome, now=now)
    log = DeliveryLog(
        job=job,
        attempt=attempt,
        status=DeliveryStatus.SUCCESS if outcome.delivered else DeliveryStatus.FAILED,
        used_provider=outcome.used_provider,
        error_message=None if outcome.delivered else outcome.error_message,
        response_status=outcome.response_status,
        duration_ms=outcome.duration_ms,
        response_excerpt=outcome.response_excerpt,
        provider_message_id=outcome.provider_message_id,
        created_at=now,
    )
    announced = emits_events and next_state.finished
    if not store.record_attempt(job, next_state=next_state, log=log, announced=announced):
        logger.warning("Job %s: lease lost during attempt %s; result not recorded", job.id, attempt)
        return None
    if announced:
        transaction.on_commit(finished_jobs_announce_soon)
    if next_state.next_attempt_at is not None:
        delay = (next_state.next_attempt_at - now).total_seconds()
        if counted_down(delay):  # one further off is the dispatcher's to publish (next_state_after)
            transaction.on_commit(lambda: job_enqueue(job_id=job.id, priority=job.priority, countdown=delay))
    return str(next_state.status)


def jobs_sweep(*, batch_size: int = 1000) -> int:
    """Finds the pending jobs whose task the broker no longer holds and the finished jobs whose announcement was
    not asked for, then dispatches; returns how many tasks it sent."""
    now = timezone.now()
    _bring_forward_lost_tasks(now=now, batch_size=batch_size)
    if finished_jobs_left_waiting(finished_before=now - PUBLISHED_AND_UNCLAIMED):
        finished_jobs_announce_soon()
    return jobs_dispatch(batch_size=batch_size)


def jobs_dispatch(*, batch_size: int = 1000) -> int:
    """Sends the task of every unfinished job whose requeue time has passed, ``batch_size`` a statement: scheduled
    sends whose time has come, and jobs whose task the broker may have lost; returns how many
    (docs/delivery-engine.md, "The dispatcher")."""
    now = timezone.now()
    next_requeue_at = now + _seconds("JOB_REQUEUE_AFTER_SECONDS")
    sent = 0
    while due := store.take_due_for_requeue(now=now, next_requeue_at=next_requeue_at, batch_size=batch_size):
        _publish_due(due, now=now)
        sent += len(due)
        if len(due) < batch_size:
            break
    if sent:
        logger.info("Dispatcher sent %d job(s)", sent)
    return sent


def _publish_due(due: Sequence[tuple[UUID, int, datetime | None]], *, now: datetime) -> None:
    """Publishes the due jobs' tasks. One due before its lock ends (a delivery waiting for its endpoint's turn or a
    retry, too far off to count down and made due ahead of it) goes on the first step with a countdown to that end:
    its claim comes at its time, neither refused before it nor kept past it by the queue. Those go out first: the
    others may be a whole batch, whose publishing would make a paced delivery miss its turn."""
    for job_id, _, until in due:
        if until is not None and until > now:
            job_enqueue(job_id=job_id, priority=Priority.HIGH, countdown=(until - now).total_seconds())
    jobs_enqueue([(job_id, priority) for job_id, priority, until in due if until is None or until <= now])


def _bring_forward_lost_tasks(*, now: datetime, batch_size: int) -> None:
    """Makes the pending jobs whose task the broker lost due now: it lost its data (restarted without persistence),
    handed the task to a worker's connection the moment the worker was killed, or the worker died after taking the
    task and before claiming the job (docs/delivery-engine.md, "The sweeper").

    The broker hands a list's tasks out in the order they came, so the N tasks a list holds are those of the N
    jobs of its priorities published last (pending, or published again once a dead worker's lease ran out), and a
    pending job published before all of them lost its task. Each list is counted before and after its jobs are
    read, and the smaller count stands: workers that take tasks meanwhile (a worker started again drains its backlog
    fast) make the first count too high, which would hide as many lost tasks; producers make the second too high.
    A queued job taken for lost is sent twice, and its copy claims nothing; a task that delivers no job, waiting on
    the first step, can hide a lost one of high priority until it is taken."""
    counted_before = queued_deliveries()
    if counted_before is None or sum(count for _, count in counted_before) > LOST_TASK_SEARCH_MAX_QUEUE:
        return
    published_last = [
        store.published_last_first(priorities=priorities, now=now, count=count + batch_size)
        for priorities, count in counted_before
    ]
    counted_after = queued_deliveries()
    if counted_after is None:
        return
    unqueued = [
        job_id
        for jobs, (_, before), (_, after) in zip(published_last, counted_before, counted_after, strict=True)
        for job_id in jobs[min(before, after) :]
    ]
    lost = store.bring_forward_unqueued(unqueued, published_before=now - PUBLISHED_AND_UNCLAIMED, now=now)
    if lost:
        queued = sum(count for _, count in counted_after)
        logger.warning("%d pending job(s) have no task in the broker (%d queued): re-sending them", lost, queued)
