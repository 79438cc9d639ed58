"""Announcing that a job finished, to the apps that push it to the account's event endpoints (core.signals)."""

from __future__ import annotations

from core.signals import AccountEvent, announce
from notifications.engine.transitions import NextState
from notifications.models import Job, JobStatus
from notifications.serializers import JobSlimSerializer


def job_finished_announce(job: Job, finished: NextState) -> None:
    """``job.completed`` or ``job.failed`` for a job that ``finished`` ends, in the caller's transaction; its data is
    the job as the jobs list shows it then (docs/event-endpoints.md)."""
    event_type = "job.completed" if finished.status == JobStatus.COMPLETED else "job.failed"
    data = dict(JobSlimSerializer(_with_state(job, finished)).data)
    announce(account_id=job.account_id, events=[AccountEvent(event_type, data)])


def _with_state(job: Job, state: NextState) -> Job:
    """A copy of ``job`` in ``state``: ``job`` itself keeps the state its caller knows."""
    copy = Job(**{field.attname: getattr(job, field.attname) for field in Job._meta.concrete_fields})
    for name, value in state.columns().items():
        setattr(copy, name, value)
    return copy
