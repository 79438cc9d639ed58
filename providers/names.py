from __future__ import annotations

from django.db import models


class ProviderName(models.TextChoices):
    """Wire values of the email providers (spec's PROVIDER_A/B/C, see DESIGN.md)."""

    SENDGRID = "SENDGRID", "SendGrid"
    RESEND = "RESEND", "Resend"
    POSTMARK = "POSTMARK", "Postmark"
