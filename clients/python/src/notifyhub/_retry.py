"""When a call is sent again, and after how long: the one retry rule of both clients.

Only what cannot do a thing twice is sent again:

- a 429 or a 503: NotifyHub refused the request before doing anything (the rate limit is checked before the body;
  a 503 leaves nothing half-done, NotifyHub's docs/rules.md, "When a service is down");
- a connection that failed before the request went out (refused, unreachable, the connect timeout);
- any other lost answer (a read timeout, a connection reset) for a ``GET`` only: the request may have been done.

Every send carries an idempotency key (``_resources.py`` makes one when the caller gave none), so even a 429 or 503
that a proxy answered after NotifyHub stored the job cannot store it twice: the repeat is 409.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from ._calls import Call

Outcome = httpx.Response | httpx.TransportError

RETRIED_STATUSES = frozenset({429, 503})
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The API's rate limit counts each key's requests over a rolling minute (docs/rules.md, "Limits").
RATE_WINDOW_SECONDS = 60.0
# A Retry-After longer than the rate window is not waited out: the error is the caller's to handle.
LONGEST_WAIT_SECONDS = RATE_WINDOW_SECONDS
FIRST_BACKOFF_SECONDS = 0.5
LONGEST_BACKOFF_SECONDS = 8.0


class RetryPolicy:
    """Decides, after each attempt, whether to send again and after how long; keeps the client's own rate window."""

    def __init__(self, max_retries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_retries = max_retries
        self._window = RateWindow(clock)

    def wait_before_retry(self, call: Call[Any], outcome: Outcome, attempt: int) -> float | None:
        """Seconds to wait before sending ``call`` again after its ``attempt``-th try (from 0), or None: no retry."""
        if isinstance(outcome, httpx.Response):
            self._window.note(outcome)
            if attempt >= self.max_retries or outcome.status_code not in RETRIED_STATUSES:
                return None
            return self._wait_after_refusal(outcome, attempt)
        if attempt < self.max_retries and (isinstance(outcome, NEVER_SENT) or call.route.method == "GET"):
            return backoff(attempt)
        return None

    def _wait_after_refusal(self, response: httpx.Response, attempt: int) -> float | None:
        asked = retry_after(response)
        if asked is not None:
            return asked if asked <= LONGEST_WAIT_SECONDS else None
        if response.status_code == 429:
            return self._wait_for_capacity(attempt)
        return backoff(attempt)

    def _wait_for_capacity(self, attempt: int) -> float:
        """The window lifts by ``until_capacity`` at the latest, and sooner when requests made elsewhere filled it,
        which this client cannot see. A refused request is not counted (docs/rules.md, "Limits"), so asking early
        costs the window nothing: the retries before the last come back on the backoff's steps, and the last waits
        out what is left, never longer than the window's bound."""
        left = self._window.until_capacity()
        return left if attempt == self.max_retries - 1 else min(backoff(attempt), left)


class RateWindow:
    """When this client's requests of the last minute were answered, and when it was first refused since. NotifyHub's
    429 has no ``Retry-After``: its window is rolling, so a slot comes back when the oldest request in it is a minute
    old (docs/rules.md, "Limits"). That is at the latest a minute after this client's oldest request in it, or, when
    requests made with the key elsewhere filled it, a minute after the first refusal: all of those were made before."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._answered: deque[float] = deque()
        self._first_refused: float | None = None
        self._lock = threading.Lock()

    def note(self, response: httpx.Response) -> None:
        with self._lock:
            now = self._clock()
            # A refused request is not counted by the API (docs/rules.md, "Limits"); an answered one ends the refusal.
            if response.status_code != 429:
                self._answered.append(now)
                self._first_refused = None
            elif self._first_refused is None or self._first_refused <= now - RATE_WINDOW_SECONDS:
                self._first_refused = now

    def until_capacity(self) -> float:
        """Seconds until a slot has come back at the latest."""
        with self._lock:
            now = self._clock()
            while self._answered and self._answered[0] <= now - RATE_WINDOW_SECONDS:
                self._answered.popleft()
            oldest = self._answered[0] if self._answered else now
            first_refused = now if self._first_refused is None else self._first_refused
        return max(0.0, min(oldest, first_refused) + RATE_WINDOW_SECONDS - now)


def retry_after(response: httpx.Response) -> float | None:
    """The answer's ``Retry-After`` in seconds from now, delta-seconds or an HTTP date (RFC 9110, section 10.2.3)."""
    value: str = response.headers.get("Retry-After", "").strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, RFC 5322 section 3.3
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def backoff(attempt: int) -> float:
    """Exponential, with jitter upwards so that clients refused together do not come back together."""
    return min(FIRST_BACKOFF_SECONDS * 2.0**attempt, LONGEST_BACKOFF_SECONDS) * random.uniform(1.0, 1.25)
