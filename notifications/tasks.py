"""Celery tasks: each loads nothing itself and calls one service."""

from __future__ import annotations

import logging
from datetime import timedelta
from uuid import UUID

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from notifications.processing import job_process, jobs_sweep
from notifications.queue import DELIVER_TASK
from notifications.services import finished_jobs_purge

logger = logging.getLogger(__name__)


@shared_task(name=DELIVER_TASK)
def deliver_job(job_id: str) -> None:
    job_process(job_id=UUID(job_id))


@shared_task(name="notifications.sweep_jobs")
def sweep_jobs() -> int:
    return jobs_sweep()


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
