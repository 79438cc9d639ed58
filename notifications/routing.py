"""Where an email goes and whom it is from (docs/rules.md, "Routing" and "Senders").

One set of rules, read when a send is accepted and again by each attempt, so the two cannot disagree:

- Free plan: from the platform's sender only, through the platform's providers (``PLATFORM_PROVIDERS``) with
  failover, or Django's email backend when none is configured; no forced routing, no priority.
- Paid plans: from the account's verified domain, through the account's own providers in priority order, or the
  forced ``provider`` then its ``fallback``; a forced route that fails is final. Without a provider key nothing is
  sent, and a failed email is not retried.

The texts the holder reads ("add a provider key", "not configured", "only ... is allowed") are the messages of the
errors raised here, listed with their codes in core/errors.py and docs/errors.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from accounts.models import Account
from accounts.selectors import configured_providers, provider_credentials
from core.errors import (
    FallbackNotConfigured,
    PlatformSenderOnly,
    PriorityNeedsPaidPlan,
    ProviderKeyRequired,
    ProviderNotConfigured,
    RoutingNeedsPaidPlan,
)
from core.mailbox import mailbox_parse
from domains.services import sender_address
from notifications.models import Job
from providers.base import Credentials
from providers.failover import Route
from providers.registry import get_provider


def platform_sender() -> str:
    return f"noreply@{settings.PLATFORM_DOMAIN}"


def platform_routes() -> list[Route]:
    """The platform's own providers in order (PLATFORM_PROVIDERS); none on a local run."""
    return [
        Route(get_provider(name), Credentials(api_key=settings.PLATFORM_PROVIDER_KEYS[name]))
        for name in settings.PLATFORM_PROVIDERS
    ]


def email_routing_check(
    *, account: Account, sender: str | None, priority: int | None, provider: str | None, fallback: str | None
) -> None:
    """At accept time: refuses what the account's plan does not allow, and what its attempts would refuse.

    A ``sender`` with a display name is judged by its address, as :func:`email_route` sends it."""
    address = None if sender is None else mailbox_parse(sender).address
    if not account.limits.is_paid:
        _check_free_plan(sender=address, priority=priority, provider=provider)
        return
    walked = _paid_route_names(configured_providers(account=account), provider=provider, fallback=fallback)
    if fallback is not None and fallback not in walked:
        raise FallbackNotConfigured(provider=fallback)
    sender_address(account=account, requested=address)


def _check_free_plan(*, sender: str | None, priority: int | None, provider: str | None) -> None:
    if provider is not None:
        raise RoutingNeedsPaidPlan()
    if priority is not None:
        raise PriorityNeedsPaidPlan()
    if sender is not None and sender.lower() != platform_sender():
        raise PlatformSenderOnly(sender=sender, platform_sender=platform_sender())


@dataclass(frozen=True)
class EmailRoute:
    """What one attempt of an email job walks: its sender, and the providers in order (none: Django's backend)."""

    sender: str
    routes: list[Route]
    # Whether the provider that answers is shown in the delivery log (paid plans only).
    names_provider: bool
    # Whether a failure may be tried again: not when the holder forced the route.
    retryable: bool


def email_route(job: Job) -> EmailRoute:
    """At each attempt: the route as the account stands now. Raises a DomainError when it cannot be sent at all."""
    return account_email_route(
        job.account, requested=job.payload.get("from"), provider=job.provider, fallback=job.fallback
    )


def account_email_route(
    account: Account, *, requested: str | None = None, provider: str | None = None, fallback: str | None = None
) -> EmailRoute:
    """The route an email of the account walks now, from ``requested`` (its `from`) or the account's sender, along
    the forced ``provider`` and ``fallback`` or every provider of the account. Raises a DomainError when it cannot be
    sent at all.

    A ``from`` with a display name is judged by its address; the name goes out as the client gave it."""
    mailbox = mailbox_parse(requested) if requested is not None else None
    if not account.limits.is_paid:
        sender = platform_sender() if mailbox is None else mailbox.at(platform_sender())
        return EmailRoute(sender, platform_routes(), names_provider=False, retryable=True)
    address = sender_address(account=account, requested=None if mailbox is None else mailbox.address)
    sender = address if mailbox is None else mailbox.at(address)
    credentials = provider_credentials(account=account)
    walked = _paid_route_names(list(credentials), provider=provider, fallback=fallback)
    return EmailRoute(
        sender,
        [Route(get_provider(name), credentials[name]) for name in walked],
        names_provider=True,
        retryable=provider is None,
    )


def _paid_route_names(configured: Sequence[str], *, provider: str | None, fallback: str | None) -> list[str]:
    """The account's providers an email walks: all of them in priority order, or the forced provider then its
    fallback while that is configured."""
    if not configured:
        raise ProviderKeyRequired()
    if provider is None:
        return list(configured)
    if provider not in configured:
        raise ProviderNotConfigured(provider=provider)
    return [provider, *([fallback] if fallback is not None and fallback in configured else [])]


def email_needs_provider_key(account: Account) -> bool:
    """A paid account without a provider key: its email could only fail again, so it is not retried."""
    return account.limits.is_paid and not configured_providers(account=account)
