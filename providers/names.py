from __future__ import annotations

from django.db import models


class ProviderName(models.TextChoices):
    """Wire values of the email providers, upper case as the API takes them."""

    SENDGRID = "SENDGRID", "SendGrid"
    RESEND = "RESEND", "Resend"
    POSTMARK = "POSTMARK", "Postmark"
