"""Wrong passwords are limited per IP and per username, so a password cannot be guessed.

Every sign-in form (the admin's now, the dashboard's later) asks
:func:`seconds_until_sign_in_allowed` before it checks a password; Django's
``user_login_failed`` signal counts each wrong one. The counts live in the cache, shared by
every web process when it is Redis (django-ratelimit's fixed windows).
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest
from django_ratelimit.core import get_usage

logger = logging.getLogger(__name__)

WRONG_TRIES_ALLOWED = 10
RATE = f"{WRONG_TRIES_ALLOWED}/15m"


def _usages(request: HttpRequest, username: str, *, increment: bool) -> list[dict[str, Any]]:
    by_username = username.strip().lower()
    keys: dict[str, Any] = {"ip": "ip", "username": lambda group, request: by_username}
    usages = [
        get_usage(request, group=f"sign-in-{kind}", key=key, rate=RATE, increment=increment)
        for kind, key in keys.items()
    ]
    return [usage for usage in usages if usage is not None]


def seconds_until_sign_in_allowed(request: HttpRequest, username: str) -> int:
    """0 while fewer than the allowed wrong tries were made from this IP and for this username."""
    waits = [
        usage["time_left"] for usage in _usages(request, username, increment=False) if usage["count"] >= usage["limit"]
    ]
    return max(waits, default=0)


@receiver(user_login_failed)
def count_wrong_sign_in(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    if request is not None:
        _usages(request, str(credentials.get("username", "")), increment=True)
