"""Delivering an email job. Free plan: the platform's sender through Django's email backend."""

from __future__ import annotations

import time

from django.core.mail import EmailMultiAlternatives
from django.utils.html import strip_tags

from notifications.delivery.outcome import AttemptOutcome
from notifications.models import Job
from notifications.services import platform_sender


def build_message(job: Job, *, sender: str) -> EmailMultiAlternatives:
    """HTML body with a plain-text part derived from it, so both kinds of client read it."""
    body = job.payload["body"]
    message = EmailMultiAlternatives(job.payload["subject"], strip_tags(body), sender, [job.payload["to"]])
    message.attach_alternative(body, "text/html")
    return message


def deliver_email(job: Job, *, attempt: int) -> AttemptOutcome:
    if job.account.limits.is_paid:
        return AttemptOutcome.failure(
            "No email provider is configured. Add at least one provider API key.", retryable=False
        )
    started = time.monotonic()
    try:
        build_message(job, sender=platform_sender()).send()
    except OSError as error:
        return AttemptOutcome.failure(f"Email backend failed: {error.strerror or error}", retryable=True)
    return AttemptOutcome(delivered=True, duration_ms=round((time.monotonic() - started) * 1000))
