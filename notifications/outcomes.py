"""Announcing that jobs finished, to the apps that push it to the account's event endpoints (core.signals).

A job of an account with event endpoints leaves a JobAnnouncement, written with its last attempt. The task that
announces is asked for once it commits, and published once for every job a process finished in the same tenth of a
second, on the broker's last priority step, behind every job: announcing never slows the jobs themselves
(docs/event-endpoints.md, "How an event is stored: the outbox"). It announces what is waiting, a batch a
transaction, each batch's rows deleted in the transaction that announces them. An announcement whose task never
came is found by the sweeper.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db import transaction

from core.signals import AccountEvent, announce
from notifications.engine.queue import LAST_STEP, CoalescedTask
from notifications.engine.transitions import NextState
from notifications.models import Job, JobAnnouncement, JobStatus
from notifications.serializers import JobSlimSerializer

ANNOUNCE_BATCH_SIZE = 500
# The jobs a process finishes within this long share one announcing task: a job pays no publish of its own, and an
# event waits this much longer (docs/event-endpoints.md).
ANNOUNCE_INTERVAL_SECONDS = 0.1
announcing = CoalescedTask(
    "notifications.announce_finished_jobs", priority=LAST_STEP, interval=ANNOUNCE_INTERVAL_SECONDS
)
ANNOUNCE_TASK = announcing.task


def finished_jobs_announce_soon() -> None:
    """Asks for the task that announces the finished jobs waiting: called once a JobAnnouncement is committed."""
    announcing.ask()


def finished_jobs_announce(*, batch_size: int = ANNOUNCE_BATCH_SIZE) -> int:
    """Announces every finished job waiting, oldest first; returns how many. Several runs at once share the work."""
    announced = 0
    while batch := _announce_batch(batch_size):
        announced += batch
    return announced


def _announce_batch(batch_size: int) -> int:
    with transaction.atomic():
        # Rows another run holds are its own: skipped, not waited for.
        waiting = JobAnnouncement.objects.select_for_update(skip_locked=True, of=("self",))
        # The job's payload stays unread: its events carry its labels (job_finished_event).
        batch = list(waiting.select_related("job").defer("job__payload").order_by("id")[:batch_size])
        by_account: defaultdict[int, list[AccountEvent]] = defaultdict(list)
        for announcement in batch:
            job = announcement.job
            by_account[job.account_id].append(job_finished_event(job, _finished_as(announcement)))
        for account_id, events in by_account.items():
            announce(account_id=account_id, events=events)
        JobAnnouncement.objects.filter(id__in=[announcement.id for announcement in batch]).delete()
    return len(batch)


def _finished_as(announcement: JobAnnouncement) -> NextState:
    """The state the job finished in: the job itself may have been retried since."""
    attempts, at = announcement.attempts, announcement.finished_at
    if announcement.status == JobStatus.COMPLETED:
        return NextState.completed(attempts=attempts, at=at)
    return NextState.failed(attempts=attempts, at=at, error=announcement.error_message)


def finished_jobs_left_waiting(*, finished_before: datetime) -> bool:
    """Whether a job that finished before ``finished_before`` is still to be announced: its task was lost."""
    return JobAnnouncement.objects.filter(finished_at__lt=finished_before).exists()


def job_finished_event(job: Job, finished: NextState) -> AccountEvent:
    """``job.completed`` or ``job.failed`` for a job that ``finished`` ends; its data is the job as the jobs list
    shows it then, with the email's tags and metadata (docs/event-endpoints.md)."""
    event_type = "job.completed" if finished.status == JobStatus.COMPLETED else "job.failed"
    data = dict(JobSlimSerializer(_with_state(job, finished)).data)
    return AccountEvent(event_type, data | (job.labels or {}))


def _with_state(job: Job, state: NextState) -> Job:
    """A copy of ``job`` in ``state``: ``job`` itself keeps the state its caller knows."""
    deferred = job.get_deferred_fields()
    fields = (field.attname for field in Job._meta.concrete_fields if field.attname not in deferred)
    copy = Job(**{name: getattr(job, name) for name in fields})
    for name, value in state.columns().items():
        setattr(copy, name, value)
    return copy
