"""Sign-in and sign-up resist guessing and flooding, without letting one person's guessing lock out another.

Every sign-in form (the admin's and the dashboard's) asks :func:`sign_in_refusal` before it checks a password;
Django's ``user_login_failed`` signal counts each wrong one, so holders who type their password right are never
slowed. Wrong passwords are counted per (network, username), per network and per username; the last only slows the
networks that have already guessed wrong for that username (docs/dashboard.md, "Limits"). Sign-up and password
reset count every attempt; the unsubscribe page counts the links NotifyHub did not sign. The counts live in the
cache, shared by every web process when it is Redis (django-ratelimit's fixed windows).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_ratelimit.core import get_usage

from core.client_address import client_network

logger = logging.getLogger(__name__)

# Wrong passwords for one username from one network: a person mistyping stays well under it.
PAIR_RATE = "10/15m"
# Wrong passwords from one network for any usernames: an office behind one proxy shares it, a sprayer hits it.
NETWORK_RATE = "50/h"
# Wrong passwords for one username from anywhere: past it the username is under attack, and every network that
# has guessed wrong for it waits out its window; a network with no wrong guess for it signs in as usual.
UNDER_ATTACK_RATE = "10/15m"
# Sign-up and password reset each send an email: an hour's few are plenty for a person.
EMAILING_RATE = "5/h"
# Links NotifyHub did not sign (an unsubscribe link altered or made up), from one network: a person copying a link
# badly makes one or two; past it the network is guessing, and waits out the window for every link, good ones too.
BAD_LINK_RATE = "20/h"


@dataclass(frozen=True)
class Count:
    count: int
    limit: int
    seconds_left: int

    @property
    def reached(self) -> bool:
        return self.count >= self.limit


def _count(request: HttpRequest, group: str, key: str, *, rate: str, increment: bool) -> Count:
    usage = get_usage(request, group=group, key=lambda group, request: key, rate=rate, increment=increment)
    # django-ratelimit answers None only when it is switched off (RATELIMIT_ENABLE): nothing is counted then.
    if usage is None:
        return Count(count=0, limit=1, seconds_left=0)
    return Count(count=usage["count"], limit=usage["limit"], seconds_left=usage["time_left"])


def _counted_keys(request: HttpRequest, name: str) -> dict[str, str]:
    """What each count is kept under: the client's network, the username (or address) typed, and the two."""
    network, name = client_network(request), name.strip().lower()
    return {"pair": f"{network} {name}", "network": network, "username": name}


SIGN_IN_RATES = {"pair": PAIR_RATE, "network": NETWORK_RATE, "username": UNDER_ATTACK_RATE}


def _sign_in_counts(request: HttpRequest, username: str, *, increment: bool) -> dict[str, Count]:
    keys = _counted_keys(request, username)
    return {
        kind: _count(request, f"sign-in-{kind}", keys[kind], rate=rate, increment=increment)
        for kind, rate in SIGN_IN_RATES.items()
    }


def seconds_until_sign_in_allowed(request: HttpRequest, username: str) -> int:
    """0 unless this network has guessed too often, for this username or for any, or the username is under
    attack and this network is one of those that guessed wrong for it."""
    counts = _sign_in_counts(request, username, increment=False)
    pair, network, attacked = counts["pair"], counts["network"], counts["username"]
    waits = [count.seconds_left for count in (pair, network) if count.reached]
    if attacked.reached and pair.count:
        # Either window ending lifts it: the attack's, or this network's own wrong guesses.
        waits.append(min(attacked.seconds_left, pair.seconds_left))
    return max(waits, default=0)


def sign_in_refusal(request: HttpRequest, username: str, *, who: str) -> HttpResponse | None:
    """The 429 page when this network may not try ``username`` now, else None."""
    wait = seconds_until_sign_in_allowed(request, username)
    reason = "There have been too many wrong passwords for this account or from your network."
    return _refusal(request, wait, f"{who} sign-in", username, title="Too many sign-in attempts", reason=reason)


def attempt_refusal(request: HttpRequest, action: str, email: str) -> HttpResponse | None:
    """Counts this attempt at ``action`` (each sends an email); the 429 page when this network or address made too
    many."""
    keys = _counted_keys(request, email)
    counts = [
        _count(request, f"{action}-{kind}", keys[kind], rate=EMAILING_RATE, increment=True)
        for kind in ("network", "username")
    ]
    wait = max((count.seconds_left for count in counts if count.count > count.limit), default=0)
    reason = "There have been too many requests for this address or from your network."
    return _refusal(request, wait, action, email, title="Too many attempts", reason=reason)


def bad_link_refusal(request: HttpRequest, page: str) -> HttpResponse | None:
    """The 429 page when this network has opened too many links of ``page`` that NotifyHub did not sign, else
    None; asked before the link is read, as a sign-in is before its password."""
    count = _count(request, f"{page}-bad-link", client_network(request), rate=BAD_LINK_RATE, increment=False)
    wait = count.seconds_left if count.reached else 0
    reason = "There have been too many invalid links from your network."
    return _refusal(request, wait, page, "", title="Too many attempts", reason=reason)


def bad_link_count(request: HttpRequest, page: str) -> None:
    """Counts one link of ``page`` that NotifyHub did not sign, opened from this network."""
    _count(request, f"{page}-bad-link", client_network(request), rate=BAD_LINK_RATE, increment=True)


def _refusal(
    request: HttpRequest, wait: int, action: str, address: str, *, title: str, reason: str
) -> HttpResponse | None:
    if not wait:
        return None
    logger.warning("%s refused for %r from %s: too many attempts", action, address, client_network(request))
    return too_many_attempts(request, title=title, reason=reason, seconds=wait)


def too_many_attempts(request: HttpRequest, *, title: str, reason: str, seconds: int) -> HttpResponse:
    context = {
        "title": title,
        "reason": reason,
        "minutes": math.ceil(seconds / 60),
        "retry_url": request.get_full_path(),
    }
    return render(request, "too_many_attempts.html", context, status=429)


@receiver(user_login_failed)
def count_wrong_sign_in(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    if request is not None:
        _sign_in_counts(request, str(credentials.get("username", "")), increment=True)
