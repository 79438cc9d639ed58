"""Delivering an email job along the route notifications.routing gives it (docs/rules.md, "Routing")."""

from __future__ import annotations

import json
import time

from core.errors import DomainError
from notifications.attachments import job_attachments
from notifications.delivery.outcome import AttemptOutcome, elapsed_ms
from notifications.models import Job
from notifications.routing import EmailRoute, email_route
from providers.base import OutgoingEmail, build_message, message_metadata
from providers.failover import send_with_failover
from suppressions.unsubscribe import unsubscribe_headers


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
    return email_send(outgoing_email(job, sender=route.sender), route)


def email_send(email: OutgoingEmail, route: EmailRoute) -> AttemptOutcome:
    """Sends ``email`` along ``route`` now, as one attempt: failover through its providers, or Django's email
    backend when it has none."""
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


def outgoing_email(job: Job, *, sender: str) -> OutgoingEmail:
    """The message an email job's payload describes (docs/rules.md, "Rich email through the providers"): ``cc`` and
    ``bcc`` without the suppressed addresses named in ``skippedRecipients``, ``replyTo`` as a list, and for an email
    with a topic the one-click unsubscribe headers (docs/suppressions.md, "One-click unsubscribe"). A key the client
    did not send stays empty, so a plain email costs a few lookups more than before."""
    payload = job.payload
    headers = payload.get("headers", {})
    if job.topic is not None:
        # The client's own headers never hold these two: the send refuses them (docs/rules.md, "Rich email").
        headers = headers | unsubscribe_headers(account_id=job.account_id, email=payload["to"], topic=job.topic)
    skipped = {entry["email"].lower() for entry in payload.get("skippedRecipients", ())}
    reply_to = payload.get("replyTo", ())
    return OutgoingEmail(
        job_id=str(job.id),
        sender=sender,
        to=payload["to"],
        subject=payload["subject"],
        html=payload["body"],
        text=payload.get("text"),
        cc=_recipients(payload.get("cc", ()), skipped),
        bcc=_recipients(payload.get("bcc", ()), skipped),
        reply_to=[reply_to] if isinstance(reply_to, str) else reply_to,
        headers=headers,
        tags=payload.get("tags", ()),
        metadata=payload.get("metadata", {}),
        attachments=job_attachments(job),
    )


def _recipients(addresses: list[str], skipped: set[str]) -> list[str]:
    return [address for address in addresses if address.lower() not in skipped] if skipped else addresses


def _send_with_django_backend(email: OutgoingEmail) -> AttemptOutcome:
    """Local runs with no platform provider: Django's EMAIL_BACKEND (files in var/outbox by default).

    Tags and metadata, which only the providers' APIs take, are shown as the ``X-Tags`` and ``X-Metadata`` headers
    anymail's Resend backend sends them as, so the local message shows what a provider would have received.
    """
    started = time.monotonic()
    message = build_message(email)
    message.extra_headers.update(_tracking_headers(email))
    try:
        message.send()
    except OSError as error:
        return AttemptOutcome.failure(f"Email backend failed: {error.strerror or error}", retryable=True)
    return AttemptOutcome(delivered=True, duration_ms=elapsed_ms(started))


def _tracking_headers(email: OutgoingEmail) -> dict[str, str]:
    headers = {"X-Tags": json.dumps(list(email.tags))} if email.tags else {}
    if email.metadata:
        headers["X-Metadata"] = json.dumps(message_metadata(email))
    return headers
