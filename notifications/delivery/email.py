"""Delivering an email job along the route notifications.routing gives it (docs/rules.md, "Routing")."""

from __future__ import annotations

import time

from core.errors import DomainError
from notifications.delivery.outcome import AttemptOutcome, elapsed_ms
from notifications.models import Job
from notifications.routing import email_route
from providers.base import OutgoingEmail, build_message
from providers.failover import send_with_failover


def deliver_email(job: Job, *, attempt: int) -> AttemptOutcome:
    try:
        route = email_route(job)
    except DomainError as error:
        # The job cannot go out as the account stands (no key, no verified domain): no retry helps.
        return AttemptOutcome.failure(error.message, retryable=False)
    if job.test:
        # Every check an attempt makes is made; the provider first in line is shown as it would be, and not called.
        first = route.routes[0].provider.name if route.names_provider and route.routes else None
        return AttemptOutcome.test_delivery(used_provider=first)
    email = OutgoingEmail(
        job_id=str(job.id),
        sender=route.sender,
        to=job.payload["to"],
        subject=job.payload["subject"],
        html=job.payload["body"],
    )
    if not route.routes:
        return _send_with_django_backend(email)
    started = time.monotonic()
    result = send_with_failover(email, route.routes)
    details = {
        "used_provider": result.last_tried if route.names_provider else None,
        "duration_ms": elapsed_ms(started),
    }
    if result.sent:
        return AttemptOutcome(delivered=True, provider_message_id=result.sent.message_id, **details)  # type: ignore[arg-type]
    return AttemptOutcome.failure(result.error_message, retryable=route.retryable, **details)


def _send_with_django_backend(email: OutgoingEmail) -> AttemptOutcome:
    """Local runs with no platform provider: Django's EMAIL_BACKEND (files in var/outbox by default)."""
    started = time.monotonic()
    try:
        build_message(email).send()
    except OSError as error:
        return AttemptOutcome.failure(f"Email backend failed: {error.strerror or error}", retryable=True)
    return AttemptOutcome(delivered=True, duration_ms=elapsed_ms(started))
