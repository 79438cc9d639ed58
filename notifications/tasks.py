"""Celery tasks: each loads nothing itself and calls one service."""

from __future__ import annotations

import logging
from datetime import timedelta
from uuid import UUID

from celery import Task, shared_task
from django.conf import settings
from django.utils import timezone

from core.errors import EmailNotSent
from notifications.engine.app_endpoints import ALERT_TASK as DISABLED_ALERT_TASK
from notifications.engine.health import ALERT_TASK
from notifications.engine.processing import (
    CLAIM_RETRY_MAX_SECONDS,
    ClaimUnavailable,
    job_process,
    jobs_dispatch,
    jobs_sweep,
)
from notifications.engine.queue import DELIVER_TASK, DISPATCH_TASK, ENQUEUE_TASK, jobs_carried, jobs_enqueue
from notifications.outcomes import ANNOUNCE_TASK, finished_jobs_announce
from notifications.services import disabled_endpoint_alert, failing_destination_alert, finished_jobs_purge

logger = logging.getLogger(__name__)


@shared_task(name=DELIVER_TASK, bind=True, max_retries=None)
def deliver_job(self: Task, job_id: str) -> None:
    try:
        job_process(job_id=UUID(job_id))
    except ClaimUnavailable as error:
        # The message is acknowledged once this task ends: a new one keeps the job moving as soon as the
        # database answers, instead of when the sweeper's requeue time comes (docs/delivery-engine.md).
        logger.warning("Job %s: database unavailable for the claim, trying again: %s", job_id, error)
        raise self.retry(countdown=min(1 + self.request.retries, CLAIM_RETRY_MAX_SECONDS)) from error


@shared_task(name=ENQUEUE_TASK)
def enqueue_jobs(*jobs: str) -> None:
    jobs_enqueue(jobs_carried(jobs))


@shared_task(name=ANNOUNCE_TASK)
def announce_finished_jobs() -> int:
    return finished_jobs_announce()


@shared_task(name="notifications.sweep_jobs")
def sweep_jobs() -> int:
    return jobs_sweep()


@shared_task(name=DISPATCH_TASK)
def dispatch_jobs() -> int:
    return jobs_dispatch()


@shared_task(name="notifications.purge_jobs")
def purge_jobs() -> int:
    """Retention: deletes the jobs that finished more than JOB_RETENTION_DAYS ago (0 keeps them)."""
    days = settings.JOB_RETENTION_DAYS
    if not days:
        return 0
    batches = finished_jobs_purge(finished_before=timezone.now() - timedelta(days=days))
    deleted = sum(batch.jobs for batch in batches)
    logger.info("Retention: deleted %d job(s) that finished more than %d days ago", deleted, days)
    return deleted


@shared_task(name=ALERT_TASK)
def alert_failing_destination(health_id: str) -> None:
    try:
        failing_destination_alert(health_id=int(health_id))
    except EmailNotSent as error:
        # Told once a day at most: a missed alert waits for the destination's next streak after that.
        logger.warning("Alert about failing destination %s not sent: %s", health_id, error.message)


@shared_task(name=DISABLED_ALERT_TASK)
def alert_disabled_endpoint(endpoint_id: str) -> None:
    try:
        disabled_endpoint_alert(endpoint_id=endpoint_id)
    except EmailNotSent as error:
        # Not sent again: the endpoint.disabled event and the dashboard still tell it.
        logger.warning("Alert about disabled endpoint %s not sent: %s", endpoint_id, error.message)
