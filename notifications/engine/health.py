"""Endpoint health: the failed attempts in a row at each webhook destination of an account, and what is said when
they reach ENDPOINT_FAILING_THRESHOLD (docs/event-endpoints.md, "Endpoint health").

Kept after each webhook attempt is recorded, in a transaction of its own: health is advice about a destination,
never part of a job's state, and a worker that dies between the two loses one count, not a delivery. A success at
a destination with no streak (the claim read its length) costs nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.api.envelope import iso_utc
from core.logs import url_origin
from core.signals import AccountEvent, announce
from notifications.delivery.outcome import AttemptOutcome
from notifications.engine.queue import LAST_STEP, task_publish
from notifications.models import DestinationHealth, Job

logger = logging.getLogger(__name__)

ALERT_TASK = "notifications.alert_failing_destination"
# The holder hears of one destination at most this often, however many streaks it has.
ALERT_INTERVAL = timedelta(days=1)


def destination_health_record(job: Job, outcome: AttemptOutcome, *, failure_streak: int) -> None:
    """Counts a webhook attempt at its destination: a success ends the streak the claim saw, a failure adds to it."""
    if outcome.delivered:
        if failure_streak:
            _streak_end(job)
        return
    _failure_count(job, error=outcome.error_message or "", at=timezone.now())


def _streak_end(job: Job) -> None:
    streak = DestinationHealth.objects.filter(account_id=job.account_id, destination=job.destination)
    streak.update(consecutive_failures=0, failing_since=None, announced=False)


def _failure_count(job: Job, *, error: str, at: datetime) -> None:
    origin = url_origin(job.payload["url"])
    with transaction.atomic():
        # Locked until the transaction ends: two workers failing there at once count one after the other.
        health, _ = DestinationHealth.objects.select_for_update().get_or_create(
            account_id=job.account_id, destination=job.destination, defaults={"origin": origin}
        )
        health.consecutive_failures += 1
        health.failing_since = health.failing_since or at
        health.origin, health.last_error = origin, error
        health.save(update_fields=["consecutive_failures", "failing_since", "origin", "last_error"])
        if health.consecutive_failures >= settings.ENDPOINT_FAILING_THRESHOLD and not health.announced:
            _failing_announce(health, at=at)


def _failing_announce(health: DestinationHealth, *, at: datetime) -> None:
    """``endpoint.failing`` once per streak, and an email to the holder at most once a day per destination."""
    assert health.failing_since is not None
    data = {
        "url": health.origin,
        "consecutiveFailures": health.consecutive_failures,
        "lastError": health.last_error,
        "since": iso_utc(health.failing_since),
    }
    announce(account_id=health.account_id, events=[AccountEvent("endpoint.failing", data)])
    alert = health.alerted_at is None or health.alerted_at <= at - ALERT_INTERVAL
    health.announced = True
    health.alerted_at = at if alert else health.alerted_at
    health.save(update_fields=["announced", "alerted_at"])
    logger.warning(
        "Webhooks of account %s to %s failed %d times in a row",
        health.account_id,
        health.origin,
        health.consecutive_failures,
    )
    if alert:
        health_id = str(health.pk)
        transaction.on_commit(lambda: _alert_publish(health_id))


def _alert_publish(health_id: str) -> None:
    """The holder's email, as a task on the last priority step: an alert is no delivery, it waits for every job."""
    error = task_publish(ALERT_TASK, health_id, priority=LAST_STEP)
    if error is not None:
        # Not swept: a streak a day later emails again.
        logger.warning("Broker unreachable; the alert about failing destination %s is not sent: %s", health_id, error)
