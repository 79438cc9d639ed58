"""Sign-in and sign-up resist guessing and flooding: attempts are limited per IP and per address.

Every sign-in form (the admin's and the dashboard's) asks :func:`sign_in_refusal` before it
checks a password; Django's ``user_login_failed`` signal counts each wrong one, so holders who
type their password right are never slowed. Sign-up and password reset count every attempt. The counts live in
the cache, shared by every web process when it is Redis (django-ratelimit's fixed windows).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_ratelimit.core import get_usage

logger = logging.getLogger(__name__)

WRONG_TRIES_ALLOWED = 10
SIGN_IN_RATE = f"{WRONG_TRIES_ALLOWED}/15m"
# Sign-up and password reset each send an email: an hour's few are plenty for a person.
EMAILING_RATE = "5/h"


def _usages(request: HttpRequest, action: str, address: str, *, rate: str, increment: bool) -> list[dict[str, Any]]:
    by_address = address.strip().lower()
    keys: dict[str, Any] = {"ip": "ip", "username": lambda group, request: by_address}
    usages = [
        get_usage(request, group=f"{action}-{kind}", key=key, rate=rate, increment=increment)
        for kind, key in keys.items()
    ]
    return [usage for usage in usages if usage is not None]


def _wait(usages: list[dict[str, Any]], *, over: bool) -> int:
    """Seconds left in the longest window whose count has reached (``over``: passed) its limit."""
    return max(
        (usage["time_left"] for usage in usages if usage["count"] > usage["limit"] - (0 if over else 1)), default=0
    )


def seconds_until_sign_in_allowed(request: HttpRequest, username: str) -> int:
    """0 while fewer than the allowed wrong tries were made from this IP and for this username."""
    return _wait(_usages(request, "sign-in", username, rate=SIGN_IN_RATE, increment=False), over=False)


def sign_in_refusal(request: HttpRequest, username: str, *, who: str) -> HttpResponse | None:
    """The 429 page when this IP or this username has had too many wrong passwords, else None."""
    wait = seconds_until_sign_in_allowed(request, username)
    reason = "There have been too many wrong passwords for this account or from your network."
    return _refusal(request, wait, f"{who} sign-in", username, title="Too many sign-in attempts", reason=reason)


def attempt_refusal(request: HttpRequest, action: str, email: str) -> HttpResponse | None:
    """Counts this attempt at ``action`` (each sends an email); the 429 page when this IP or address made too many."""
    wait = _wait(_usages(request, action, email, rate=EMAILING_RATE, increment=True), over=True)
    reason = "There have been too many requests for this address or from your network."
    return _refusal(request, wait, action, email, title="Too many attempts", reason=reason)


def _refusal(
    request: HttpRequest, wait: int, action: str, address: str, *, title: str, reason: str
) -> HttpResponse | None:
    if not wait:
        return None
    logger.warning("%s refused for %r from %s: too many attempts", action, address, _address(request))
    return too_many_attempts(request, title=title, reason=reason, seconds=wait)


def too_many_attempts(request: HttpRequest, *, title: str, reason: str, seconds: int) -> HttpResponse:
    context = {
        "title": title,
        "reason": reason,
        "minutes": math.ceil(seconds / 60),
        "retry_url": request.get_full_path(),
    }
    return render(request, "too_many_attempts.html", context, status=429)


def _address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR"))


@receiver(user_login_failed)
def count_wrong_sign_in(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    if request is not None:
        _usages(request, "sign-in", str(credentials.get("username", "")), rate=SIGN_IN_RATE, increment=True)
