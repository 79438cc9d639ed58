"""Handing event deliveries to the broker, behind every job: a send is never held up by the events about others."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

from django.utils import timezone

from core.unavailable import DATABASE_FAULTS
from event_endpoints.models import EventDelivery, EventDeliveryStatus
from notifications.engine import store
from notifications.engine.queue import LAST_STEP, task_publish

logger = logging.getLogger(__name__)

DELIVER_EVENT_TASK = "event_endpoints.deliver_event"
UNFINISHED = [EventDeliveryStatus.PENDING, EventDeliveryStatus.PROCESSING]


def event_deliveries_enqueue(delivery_ids: Sequence[UUID], *, countdown: float | None = None) -> None:
    """Sends each delivery's task on the last priority step: workers take every waiting job before an event's
    delivery, so emitting events does not slow the jobs that cause them (docs/event-endpoints.md). Those the broker
    does not take are due for the sweeper when their tasks were."""
    unsent: list[UUID] = []
    for delivery_id in delivery_ids:
        error = task_publish(DELIVER_EVENT_TASK, str(delivery_id), priority=LAST_STEP, countdown=countdown)
        if error is not None:
            logger.warning(
                "Broker unreachable; event delivery %s will be re-sent by the sweeper: %s", delivery_id, error
            )
            unsent.append(delivery_id)
    if unsent:
        _leave_to_the_sweeper(unsent, publish_at=timezone.now() + timedelta(seconds=countdown or 0))


def _leave_to_the_sweeper(delivery_ids: list[UUID], *, publish_at: datetime) -> None:
    try:
        store.mark_unpublished(EventDelivery.objects.filter(id__in=delivery_ids), publish_at=publish_at)
    except DATABASE_FAULTS as error:
        # Their requeue time, set when they were stored, still brings them back, later.
        logger.warning("%d event deliveries not marked for the sweeper: %s", len(delivery_ids), error)
