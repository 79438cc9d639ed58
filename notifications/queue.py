"""Handing jobs to the broker. The database stays the source of truth: a lost message is re-sent."""

from __future__ import annotations

import logging
from uuid import UUID

from kombu.exceptions import OperationalError

from notifyhub.celery import app

logger = logging.getLogger(__name__)

DELIVER_TASK = "notifications.deliver_job"
# Job priority (1 high, 5 normal, 10 low) to the Redis transport's steps, where 0 is consumed first.
BROKER_PRIORITY = {1: 0, 5: 5, 10: 9}


def job_enqueue(*, job_id: UUID, priority: int, countdown: float | None = None) -> None:
    """Sends the job's task; if the broker is unreachable the job waits for the sweeper instead.

    The job row is already committed, so the client's 202 stands: failing the request here
    would report a job as not accepted while it will be delivered.
    """
    try:
        app.send_task(DELIVER_TASK, args=[str(job_id)], priority=BROKER_PRIORITY[priority], countdown=countdown)
    except (OperationalError, OSError) as error:
        logger.warning("Broker unreachable; job %s will be re-sent by the sweeper: %s", job_id, error)
