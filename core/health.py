"""Whether the parts the service cannot work without answer: the database and the broker.

Each probe gives up after ``PROBE_TIMEOUT_SECONDS``, so a dead dependency makes the health check
answer "down" instead of hanging the request, and any error counts as down: a health check that
fails with a 500 tells an operator nothing.
"""

from __future__ import annotations

import logging
import queue
import tempfile
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import load_backend
from redis.backoff import NoBackoff
from redis.retry import Retry

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 2
OK, DOWN = "ok", "down"
STATUSES = [OK, DOWN]


def database_answers() -> None:
    """``SELECT 1`` on a connection of its own, answered within ``PROBE_TIMEOUT_SECONDS`` in all.

    The connect timeout alone does not bound it behind PgBouncer: the connection is to the pooler, which answers at
    once, and the query then waits for a server connection up to PgBouncer's ``query_wait_timeout``
    (docs/operations.md, "Beyond one machine"). So the probe runs in a thread of its own and is given up on after the
    timeout; the thread ends when the pooler gives up too, closing its connection.
    """
    done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
    threading.Thread(target=_select_one, args=(done,), name="health-database-probe", daemon=True).start()
    try:
        error = done.get(timeout=PROBE_TIMEOUT_SECONDS)
    except queue.Empty:
        raise TimeoutError(f"no answer to SELECT 1 within {PROBE_TIMEOUT_SECONDS} s") from None
    if error is not None:
        raise error


def _select_one(done: queue.SimpleQueue[BaseException | None]) -> None:
    """Not the request's connection: Django would wait on a dead server as long as libpq lets it (no connect timeout
    is set for the app's own connections), and a failed probe must not leave the request's connection broken."""
    # The live settings: under test they name the test database.
    database: dict[str, Any] = connections.settings[DEFAULT_DB_ALIAS]
    probe = load_backend(database["ENGINE"]).DatabaseWrapper(_with_connect_timeout(database), DEFAULT_DB_ALIAS)
    try:
        with probe.cursor() as cursor:
            # Off the framework's road: docs/departures.md, "health-probe".
            cursor.execute("SELECT 1")
    except Exception as error:
        done.put(error)
    else:
        done.put(None)
    finally:
        probe.close()


def _with_connect_timeout(database: dict[str, Any]) -> dict[str, Any]:
    options = dict(database.get("OPTIONS", {}))
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        options["connect_timeout"] = PROBE_TIMEOUT_SECONDS  # libpq's minimum, and psycopg's
    return {**database, "OPTIONS": options}


def broker_answers() -> None:
    """Redis answers PING; in embedded mode, the file broker's folder takes a new file."""
    if settings.REDIS_URL:
        _redis(settings.REDIS_URL).ping()
        return
    # An unnamed temporary file (O_TMPFILE where the system has it): no broker reader ever sees it.
    with tempfile.TemporaryFile(dir=str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])):
        pass


@cache
def _redis(url: str) -> redis.Redis:
    # One try: redis-py's default retries with backoff would outlast the timeout.
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=PROBE_TIMEOUT_SECONDS,
        socket_timeout=PROBE_TIMEOUT_SECONDS,
        retry=Retry(NoBackoff(), 0),
    )


PROBES: dict[str, Callable[[], None]] = {"database": database_answers, "broker": broker_answers}


def health_check() -> dict[str, str]:
    """Each part's status, ``ok`` or ``down``, in a fixed order: database, broker."""
    return {part: _status(part, probe) for part, probe in PROBES.items()}


def _status(part: str, probe: Callable[[], None]) -> str:
    try:
        probe()
    except Exception as error:
        # The error's text names a host and port at most; the URLs with their passwords stay in settings.
        logger.warning("Health check: the %s is down: %s: %s", part, type(error).__name__, error)
        return DOWN
    return OK
