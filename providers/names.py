from __future__ import annotations

from django.db import models


class ProviderName(models.TextChoices):
    """Wire values of the email providers, upper case as the API takes them."""

    SENDGRID = "SENDGRID", "SendGrid"
    RESEND = "RESEND", "Resend"
    POSTMARK = "POSTMARK", "Postmark"


class EmailEventType(models.TextChoices):
    """What a provider reports about a sent email, in NotifyHub's words (docs/inbound-events.md)."""

    DELIVERED = "DELIVERED"
    OPENED = "OPENED"
    CLICKED = "CLICKED"
    BOUNCED = "BOUNCED"
    SPAM_REPORT = "SPAM_REPORT"
    UNSUBSCRIBED = "UNSUBSCRIBED"
    # A deferred delivery or a temporary failure: the provider is still trying.
    DEFERRED = "DEFERRED"
