"""A shared store's outage as one process sees it: from the first failure until it answers again, callers go on
without it (each caller says how), and one of them tries it again every STORE_RETRY_SECONDS (docs/rules.md, "When a
service is down"). The API's rate limiter (accounts/throttle.py) and the endpoints' pacing (core/pacing.py) keep
their Redis's outages so.
"""

from __future__ import annotations

import logging
import threading
import time

# After a failure, the store is tried again by one caller this often; the others meanwhile go on without it.
STORE_RETRY_SECONDS = 5.0


class StoreOutage:
    """Whether to ask the store now, and the log lines of an outage: one as it begins, one as it ends."""

    def __init__(self, logger: logging.Logger, *, down: str, back: str) -> None:
        # ``down`` is formatted with the error, ``back`` with the outage's seconds.
        self._logger, self._down, self._back = logger, down, back
        self._lock = threading.Lock()
        # Both None while the store answers; set from the first failure until the store answers again.
        self._down_since: float | None = None
        self._last_try: float | None = None

    def store_due(self) -> bool:
        """Always while the store answers; during an outage, one caller per STORE_RETRY_SECONDS."""
        if self._down_since is None:
            return True
        with self._lock:
            now = time.monotonic()
            if self._last_try is not None and now - self._last_try < STORE_RETRY_SECONDS:
                return False
            self._last_try = now
            return True

    def failed(self, error: object) -> bool:
        """Notes a failure; True when it begins an outage (logged then, once)."""
        with self._lock:
            self._last_try = time.monotonic()
            if self._down_since is not None:
                return False
            self._down_since = self._last_try
        self._logger.warning(self._down, error)
        return True

    def answered(self) -> None:
        """Notes an answer: an outage under way ends (logged, with its length)."""
        if self._down_since is None:
            return
        with self._lock:
            if self._down_since is None:
                return
            seconds = time.monotonic() - self._down_since
            self._down_since = self._last_try = None
        self._logger.info(self._back, seconds)
