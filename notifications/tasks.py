"""Celery tasks: each loads nothing itself and calls one service."""

from __future__ import annotations

from uuid import UUID

from celery import shared_task

from notifications.processing import job_process, jobs_sweep
from notifications.queue import DELIVER_TASK


@shared_task(name=DELIVER_TASK)
def deliver_job(job_id: str) -> None:
    job_process(job_id=UUID(job_id))


@shared_task(name="notifications.sweep_jobs")
def sweep_jobs() -> int:
    return jobs_sweep()
