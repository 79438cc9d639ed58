"""Delivering an event to an endpoint: claimed, attempted, recorded and swept as a webhook job is
(docs/delivery-engine.md), with the same client, address rules, signatures, attempts and delays.

The database is the source of truth: a task only names a delivery, and whoever claims it with a conditional
UPDATE sends it; the sweeper re-sends the tasks the broker lost.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from functools import partial
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.authentication import INACTIVE_ACCOUNT_MESSAGE
from accounts.selectors import signing_secrets_get
from core.api.envelope import iso_utc
from core.unavailable import DATABASE_FAULTS
from event_endpoints.models import EventDelivery, EventDeliveryStatus
from event_endpoints.queue import UNFINISHED, event_deliveries_enqueue
from notifications.delivery.http import stored_url
from notifications.delivery.outcome import AttemptOutcome
from notifications.delivery.webhook import build_headers, send
from notifications.delivery.wire import json_bytes
from notifications.engine import store
from notifications.engine.lease import lease_length, renewer
from notifications.engine.processing import (
    CLAIM_TOLERANCE,
    ClaimUnavailable,
    counted_down,
    next_state_after,
    record_within_lease,
    worker_deaths_stop,
)
from notifications.models import MAX_ATTEMPTS

logger = logging.getLogger(__name__)


def event_delivery_process(*, delivery_id: UUID) -> None:
    """Runs one attempt of the delivery if this worker can claim it; otherwise does nothing.

    Raises ClaimUnavailable when the database cannot be reached for the claim.
    """
    try:
        delivery = _claim(delivery_id)
    except DATABASE_FAULTS as error:
        connection.close()
        raise ClaimUnavailable(str(error)) from error
    if delivery is None:
        return
    with renewer.held(delivery, partial(store.renew_lease, EventDelivery, delivery.id)) as lease:
        outcome = _stopped(delivery) or _attempt(delivery)
        record_within_lease(lease, lambda: _record(delivery, outcome), name=f"Event delivery {delivery.id}")


def _claim(delivery_id: UUID) -> EventDelivery | None:
    """Takes the delivery for one attempt, as `notifications.engine.store.claim` takes a job, with its event,
    endpoint and account; None when it is not claimable (taken, finished, waiting, or its endpoint deleted)."""
    now = timezone.now()
    lease_until = now + lease_length()
    claimable = Q(status=EventDeliveryStatus.PENDING) | Q(
        status=EventDeliveryStatus.PROCESSING, locked_until__lte=now + CLAIM_TOLERANCE
    )
    claimed = EventDelivery.objects.filter(claimable, id=delivery_id).update(
        status=EventDeliveryStatus.PROCESSING,
        locked_until=lease_until,
        requeue_at=lease_until,
        next_attempt_at=None,
        claims=F("claims") + 1,
    )
    if not claimed:
        return None
    return EventDelivery.objects.select_related("event", "endpoint__account").filter(id=delivery_id).first()


def _stopped(delivery: EventDelivery) -> AttemptOutcome | None:
    """The failure of a delivery that must not be attempted at all; None when it may be."""
    if stop := worker_deaths_stop(claims=delivery.claims, attempts=delivery.attempts):
        logger.error("Event delivery %s: %s", delivery.id, stop.error_message)
        return stop
    if not delivery.endpoint.account.is_usable:
        return AttemptOutcome.failure(INACTIVE_ACCOUNT_MESSAGE, retryable=False)
    return None


def _attempt(delivery: EventDelivery) -> AttemptOutcome:
    event, endpoint = delivery.event, delivery.endpoint
    body = json_bytes(
        {"id": str(event.id), "type": event.type, "createdAt": iso_utc(event.created_at), "data": event.data}
    )
    try:
        headers = build_headers(
            webhook_id=str(event.id),
            attempt=delivery.attempts + 1,
            custom={},
            body=body,
            secrets=signing_secrets_get(account_id=endpoint.account_id),
            now=int(time.time()),
        )
        return send("POST", stored_url(endpoint.url, endpoint.url_credentials), body=body, headers=headers)
    except Exception:
        # A bug must not leave the delivery stuck.
        logger.exception("Event delivery %s crashed", delivery.id)
        return AttemptOutcome.failure("Internal error while delivering; will retry", retryable=True)


def _record(delivery: EventDelivery, outcome: AttemptOutcome) -> bool:
    """Writes the attempt's outcome if this worker still holds the lease; False, writing nothing, if not."""
    now = timezone.now()
    attempt = delivery.attempts + 1
    next_state = next_state_after(
        outcome, attempt=attempt, max_attempts=MAX_ATTEMPTS, delays=settings.WEBHOOK_RETRY_DELAYS, now=now
    )
    held = EventDelivery.objects.filter(
        id=delivery.id, status=EventDeliveryStatus.PROCESSING, locked_until=delivery.locked_until
    )
    if not held.update(
        **next_state.columns(), response_status=outcome.response_status, duration_ms=outcome.duration_ms
    ):
        logger.warning("Event delivery %s: lease lost during attempt %s; result not recorded", delivery.id, attempt)
        return False
    if next_state.next_attempt_at is not None:
        delay = (next_state.next_attempt_at - now).total_seconds()
        if counted_down(delay):  # one further off is the sweep's to publish (next_state_after)
            transaction.on_commit(lambda: event_deliveries_enqueue([delivery.id], countdown=delay))
    return True


def event_deliveries_sweep(*, batch_size: int = 1000) -> int:
    """Sends the tasks of unfinished deliveries whose requeue time has passed, as the dispatcher sends jobs'
    (docs/event-endpoints.md, "How an event is delivered"): those the broker lost, and the retries too far off to be
    counted down, a moment before their time; returns how many."""
    now = timezone.now()
    next_requeue_at = now + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)
    due = store.take_due(
        EventDelivery.objects.filter(status__in=UNFINISHED),
        "id",
        "locked_until",
        now=now,
        next_requeue_at=store.requeue_pushed(now=now, next_requeue_at=next_requeue_at),
        batch_size=batch_size,
    )
    # A retry due before its lock ends is counted down to that end: its claim would be refused before it.
    for delivery_id, until in due:
        if until is not None and until > now:
            event_deliveries_enqueue([delivery_id], countdown=(until - now).total_seconds())
    event_deliveries_enqueue([delivery_id for delivery_id, until in due if until is None or until <= now])
    if due:
        logger.info("Sweeper sent %d event deliveries", len(due))
    return len(due)
