"""Delivering an email job (docs/rules.md, "Routing").

Free plan: the platform's providers (``PLATFORM_PROVIDERS``) with failover, or Django's email
backend when none is configured; logs never name a provider. Paid plans: the account's own
providers in priority order, or the forced ``provider`` and ``fallback``; forced routing is
never retried.
"""

from __future__ import annotations

import time

from accounts.selectors import provider_credentials
from core.errors import DomainError, ProviderKeyRequired, ProviderNotConfigured
from domains.services import sender_address
from notifications.delivery.outcome import AttemptOutcome, elapsed_ms
from notifications.models import Job
from notifications.services import platform_routes, platform_sender
from providers.base import OutgoingEmail, build_message
from providers.failover import Route, send_with_failover
from providers.registry import get_provider


def deliver_email(job: Job, *, attempt: int) -> AttemptOutcome:
    paid = job.account.limits.is_paid
    try:
        sender = sender_address(account=job.account, requested=job.payload.get("from")) if paid else platform_sender()
        routes = _account_routes(job) if paid else platform_routes()
    except DomainError as error:
        # The job cannot go out as the account stands (no key, no verified domain): no retry helps.
        return AttemptOutcome.failure(error.message, retryable=False)
    email = OutgoingEmail(
        job_id=str(job.id),
        sender=sender,
        to=job.payload["to"],
        subject=job.payload["subject"],
        html=job.payload["body"],
    )
    if not routes:
        return _send_with_django_backend(email)
    started = time.monotonic()
    result = send_with_failover(email, routes)
    details = {
        # usedProvider is shown to paid plans only (docs/rules.md, "Routing").
        "used_provider": result.last_tried if paid else None,
        "duration_ms": elapsed_ms(started),
    }
    if result.sent:
        return AttemptOutcome(delivered=True, provider_message_id=result.sent.message_id, **details)  # type: ignore[arg-type]
    # A forced route that failed is final (docs/rules.md, "Routing").
    return AttemptOutcome.failure(result.error_message, retryable=job.provider is None, **details)


def _account_routes(job: Job) -> list[Route]:
    credentials = provider_credentials(account=job.account)
    if not credentials:
        raise ProviderKeyRequired()
    if job.provider is None:
        return [Route(get_provider(name), key) for name, key in credentials.items()]
    forced = [job.provider, *([job.fallback] if job.fallback else [])]
    if job.provider not in credentials:
        raise ProviderNotConfigured(provider=job.provider)
    return [Route(get_provider(name), credentials[name]) for name in forced if name in credentials]


def _send_with_django_backend(email: OutgoingEmail) -> AttemptOutcome:
    """Local runs with no platform provider: Django's EMAIL_BACKEND (files in var/outbox by default)."""
    started = time.monotonic()
    try:
        build_message(email).send()
    except OSError as error:
        return AttemptOutcome.failure(f"Email backend failed: {error.strerror or error}", retryable=True)
    return AttemptOutcome(delivered=True, duration_ms=elapsed_ms(started))
