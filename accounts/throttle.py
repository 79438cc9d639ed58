"""The rolling one-minute rate limits: per API key (docs/rules.md, "Limits"), and per account for the
providers' event posts (docs/inbound-events.md).

``limits``' moving window keeps each hit's time, so the window really rolls; on Redis the
check-and-record is one Lua script, exact under concurrency across processes. While the store
fails, each process limits in its own memory with the same strategy, and tries the store again
every few seconds.
"""

from __future__ import annotations

import logging
from functools import cache

from django.conf import settings
from limits import RateLimitItem, RateLimitItemPerMinute
from limits.errors import StorageError
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from prometheus_client import Counter
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from accounts.models import ApiKey
from core.store_outage import StoreOutage

logger = logging.getLogger(__name__)

# A request asks the store once; a store that hangs (a stalled Redis, a dropped network) costs it this much, not
# the seconds a TCP connect or read can take. Redis answers the script in well under a millisecond.
STORE_TIMEOUT_SECONDS = 0.25

_fallbacks = Counter(
    "notifyhub_rate_limiter_fallbacks",
    "Times a process began limiting API keys in its own memory because the rate limiter's store failed.",
)


class FallbackLimiter:
    """The shared store's moving window, or this process's own while the store fails.

    In memory a key gets its account's limit in each process, not across them: looser, but still a limit.
    """

    def __init__(self, shared: MovingWindowRateLimiter) -> None:
        self._shared = shared
        self._local = MovingWindowRateLimiter(MemoryStorage())
        # While it fails, the store is tried again by one request every few seconds; the others use memory.
        self._outage = StoreOutage(
            logger,
            down="Rate limiter store unavailable (%s); limiting in this process's memory until it answers",
            back="Rate limiter store answers again after %.1fs; limiting there again",
        )

    def hit(self, item: RateLimitItem, *identifiers: str) -> bool:
        if self._outage.store_due():
            try:
                allowed = self._shared.hit(item, *identifiers)
            except StorageError as error:
                if self._outage.failed(error.storage_error):
                    _fallbacks.inc()
            else:
                self._outage.answered()
                return allowed
        return self._local.hit(item, *identifiers)

    def reset(self) -> None:
        self._local.storage.reset()
        self._shared.storage.reset()


@cache
def _limiter() -> FallbackLimiter:
    # wrap_exceptions: every failure of the store's client arrives as one StorageError.
    store = storage_from_string(
        settings.RATELIMIT_STORAGE_URL,
        wrap_exceptions=True,
        socket_connect_timeout=STORE_TIMEOUT_SECONDS,
        socket_timeout=STORE_TIMEOUT_SECONDS,
    )
    return FallbackLimiter(MovingWindowRateLimiter(store))


def per_minute_hit(*, scope: str, key: str, limit: int) -> bool:
    """Records one request for ``key`` within ``scope``; False once ``limit`` were recorded in the last minute."""
    return _limiter().hit(RateLimitItemPerMinute(limit), scope, key)


def api_key_hit(*, api_key: ApiKey) -> bool:
    """Records one request for the key; False once its account's rate limit (its own, else its plan's) is reached
    in the last minute. The account's columns came with the key's one lookup (accounts.selectors.api_key_find)."""
    return per_minute_hit(scope="api-key", key=str(api_key.pk), limit=api_key.account.limits.requests_per_minute)


def reset_rate_limits() -> None:
    """Forgets every recorded hit (tests and `make run` restarts)."""
    _limiter().reset()


class ApiKeyRateThrottle(BaseThrottle):
    def allow_request(self, request: Request, view: APIView) -> bool:
        if not isinstance(request.auth, ApiKey):
            return True
        return api_key_hit(api_key=request.auth)

    def wait(self) -> None:
        # A 429 carries no Retry-After (docs/rules.md).
        return None
