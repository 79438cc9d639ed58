"""Celery tasks of event deliveries: each loads nothing itself and calls one service."""

from __future__ import annotations

import logging
from datetime import timedelta
from uuid import UUID

from celery import Task, shared_task
from django.conf import settings
from django.utils import timezone

from event_endpoints.delivery import event_deliveries_sweep, event_delivery_process
from event_endpoints.queue import DELIVER_EVENT_TASK
from event_endpoints.services import events_purge
from notifications.engine.processing import CLAIM_RETRY_MAX_SECONDS, ClaimUnavailable

logger = logging.getLogger(__name__)


@shared_task(name=DELIVER_EVENT_TASK, bind=True, max_retries=None)
def deliver_event(self: Task, delivery_id: str) -> None:
    try:
        event_delivery_process(delivery_id=UUID(delivery_id))
    except ClaimUnavailable as error:
        # As a job's task does (notifications.tasks.deliver_job): run again as soon as the database answers.
        logger.warning("Event delivery %s: database unavailable for the claim, trying again: %s", delivery_id, error)
        raise self.retry(countdown=min(1 + self.request.retries, CLAIM_RETRY_MAX_SECONDS)) from error


@shared_task(name="event_endpoints.sweep_deliveries")
def sweep_event_deliveries() -> int:
    return event_deliveries_sweep()


@shared_task(name="event_endpoints.purge_events")
def purge_events() -> int:
    """Retention: the events created more than JOB_RETENTION_DAYS ago, delivered or given up (0 keeps them)."""
    days = settings.JOB_RETENTION_DAYS
    if not days:
        return 0
    purged = events_purge(created_before=timezone.now() - timedelta(days=days))
    logger.info("Retention: deleted %d event(s) created more than %d days ago", purged, days)
    return purged
