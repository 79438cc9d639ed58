"""The rolling one-minute rate limit per API key (docs/rules.md, "Limits").

``limits``' moving window keeps each hit's time, so the window really rolls; on Redis the
check-and-record is one Lua script, exact under concurrency across processes.
"""

from __future__ import annotations

import logging
from functools import cache

from django.conf import settings
from limits import RateLimitItemPerMinute
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from accounts.models import ApiKey

logger = logging.getLogger(__name__)


@cache
def _limiter() -> MovingWindowRateLimiter:
    return MovingWindowRateLimiter(storage_from_string(settings.RATELIMIT_STORAGE_URL))


def api_key_hit(*, api_key: ApiKey) -> bool:
    """Records one request for the key; False once the plan's limit is reached in the last minute."""
    item = RateLimitItemPerMinute(api_key.account.limits.requests_per_minute)
    try:
        return _limiter().hit(item, "api-key", str(api_key.pk))
    except Exception:
        # A limiter outage must not take the API down with it: let the request through, loudly.
        logger.exception("Rate limiter unavailable; request allowed")
        return True


def reset_rate_limits() -> None:
    """Forgets every recorded hit (tests and `make run` restarts)."""
    _limiter().storage.reset()


class ApiKeyRateThrottle(BaseThrottle):
    def allow_request(self, request: Request, view: APIView) -> bool:
        if not isinstance(request.auth, ApiKey):
            return True
        return api_key_hit(api_key=request.auth)

    def wait(self) -> None:
        # A 429 carries no Retry-After (docs/rules.md).
        return None
