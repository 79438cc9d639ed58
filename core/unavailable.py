"""Faults of the services NotifyHub stands on, answered ``503`` with ``Retry-After`` instead of ``500``.

The database restarting, or Redis (the cache behind the dashboard's sign-in limits) unreachable, is
not the request's fault and not a bug: the client should come back in a few seconds (docs/rules.md,
"When a service is down"). Nothing is half-done by then: a request's writes are one statement or one
transaction, so a fault rolls back what the request began.
"""

from __future__ import annotations

import logging

import redis
from django import db

logger = logging.getLogger(__name__)

UNAVAILABLE_MESSAGE = "Service temporarily unavailable"
RETRY_AFTER_SECONDS = 5
# The database's connection and server-side failures (psycopg's and sqlite3's, which Django wraps in these).
DATABASE_FAULTS: tuple[type[Exception], ...] = (db.OperationalError, db.InterfaceError)
# Those, and redis-py's connection failures.
SERVICE_FAULTS: tuple[type[Exception], ...] = (*DATABASE_FAULTS, redis.ConnectionError, redis.TimeoutError)


def is_service_fault(error: BaseException | None) -> bool:
    return isinstance(error, SERVICE_FAULTS)


def log_service_fault(error: BaseException) -> None:
    # One line without a traceback: the cause is outside the code, and an outage would fill the log.
    logger.warning("Service unavailable, answered 503: %s: %s", type(error).__name__, error)


def retry_after_header() -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}
