"""Handing jobs to the broker. The database stays the source of truth: a lost message is re-sent."""

from __future__ import annotations

from uuid import UUID

from notifyhub.celery import app

DELIVER_TASK = "notifications.deliver_job"
# Job priority (1 high, 5 normal, 10 low) to the Redis transport's steps, where 0 is consumed first.
BROKER_PRIORITY = {1: 0, 5: 5, 10: 9}


def job_enqueue(*, job_id: UUID, priority: int, countdown: float | None = None) -> None:
    app.send_task(DELIVER_TASK, args=[str(job_id)], priority=BROKER_PRIORITY[priority], countdown=countdown)
