"""A message delivery's endpoint as the engine keeps it (docs/customer-webhooks.md): nothing goes to it while it is
disabled, at most its rate limit a second goes to it, and it is disabled when it answers 410 Gone or every attempt
at it has failed for ENDPOINT_DISABLE_AFTER_SECONDS.

The endpoint belongs to customer_webhooks, an app above this one: the engine reaches it through the job's foreign
key (store.Endpoint) and tells that app and event endpoints through core.signals, never importing it.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import pacing
from core.signals import AccountEvent, announce
from notifications.delivery.outcome import AttemptOutcome
from notifications.engine import store
from notifications.engine.queue import LAST_STEP, dispatched_at, task_publish
from notifications.models import Job

logger = logging.getLogger(__name__)

DISABLED_MESSAGE = "Endpoint disabled"
ALERT_TASK = "notifications.alert_disabled_endpoint"
# Why NotifyHub disabled an endpoint (Endpoint.disabled_reason).
GONE, FAILING = "gone", "failing"


def endpoint_stop(endpoint: store.EndpointTarget) -> AttemptOutcome | None:
    """The failure of a delivery to a disabled endpoint, no request made: for good, as a 4xx is. Re-enabling the
    endpoint and recovering its failed deliveries sends them again (docs/customer-webhooks.md, "Disabling")."""
    if endpoint.disabled:
        return AttemptOutcome.failure(DISABLED_MESSAGE, retryable=False)
    return None


def turn_reserved(job: Job, *, rate_limit: int | None) -> None:
    """Gives a new delivery to an endpoint limited to ``rate_limit`` a second, not stored yet, its turn
    (docs/customer-webhooks.md, "Rate limit"): one still to come leaves it stored locked until then and due for the
    dispatcher its lead before, which publishes its task counted down to it, so no worker takes the delivery up only
    to hand it back. A test delivery is never paced; one whose turn is now, or with no turn reserved, is left as it
    is, and its worker asks for its turn (`seconds_to_turn`)."""
    if not rate_limit or job.test:
        return
    seconds = pacing.reserve(key=_pace_key(job.endpoint_id), caller=str(job.id), per_second=rate_limit)
    if seconds:
        turn = timezone.now() + timedelta(seconds=seconds)
        job.locked_until, job.requeue_at = turn, dispatched_at(turn)


def seconds_to_turn(job: Job, endpoint: store.EndpointTarget) -> float:
    """How long the delivery waits for its turn under its endpoint's rate limit (core/pacing.py): 0, it goes now,
    after waiting here the moment its place was away; otherwise it comes back then."""
    if not endpoint.rate_limit or job.test:
        return 0
    turn = pacing.turn(key=_pace_key(endpoint.id), caller=str(job.id), per_second=endpoint.rate_limit)
    if not turn.taken:
        return turn.seconds
    time.sleep(turn.seconds)  # at most pacing.HOLD_MS: less than handing the delivery back and taking it again
    return 0


def _pace_key(endpoint_id: object) -> str:
    return f"endpoint:{endpoint_id}"


def endpoint_attempt_record(job: Job, endpoint: store.EndpointTarget, outcome: AttemptOutcome) -> None:
    """What an attempt that reached the endpoint tells of it: a success ends its run of failures (one statement,
    only when there is one), a failure starts one, or, run long enough or answered 410 Gone, disables it."""
    if outcome.delivered:
        if endpoint.failing_since is not None:
            store.endpoint_failing_since(endpoint.id, since=None)
        return
    now = timezone.now()
    if outcome.response_status == HTTPStatus.GONE:
        endpoint_disable(job, endpoint, reason=GONE)
    elif endpoint.failing_since is None:
        store.endpoint_failing_since(endpoint.id, since=now)
    elif _failing_long_enough(endpoint.failing_since, now=now):
        endpoint_disable(job, endpoint, reason=FAILING)


def _failing_long_enough(since: datetime, *, now: datetime) -> bool:
    return now - since >= timedelta(seconds=settings.ENDPOINT_DISABLE_AFTER_SECONDS)


def endpoint_disable(job: Job, endpoint: store.EndpointTarget, *, reason: str) -> None:
    """Disables the endpoint, announces ``endpoint.disabled`` in the same transaction and, once that commits, asks
    for the holder's email; an endpoint disabled meanwhile by another attempt or its holder is left as it is."""
    with transaction.atomic():
        disabled = store.endpoint_disable(endpoint.id, reason=reason)
        if disabled is None:
            return
        announce(account_id=job.account_id, events=[AccountEvent("endpoint.disabled", _event_data(disabled, reason))])
        endpoint_id = str(endpoint.id)
        transaction.on_commit(lambda: _alert_publish(endpoint_id))
    logger.warning("Endpoint %s of account %s disabled: %s", endpoint.id, job.account_id, reason)


def _event_data(disabled: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "appId": str(disabled["app_id"]),
        "appUid": disabled["app__uid"],
        "endpointId": str(disabled["id"]),
        "url": disabled["url"],
        "reason": reason,
    }


def _alert_publish(endpoint_id: str) -> None:
    """The holder's email, on the last priority step, as engine/health.py sends its alert."""
    error = task_publish(ALERT_TASK, endpoint_id, priority=LAST_STEP)
    if error is not None:
        logger.warning("Broker unreachable; the email about disabled endpoint %s is not sent: %s", endpoint_id, error)
