"""What the email providers report about each message, and how each proves a report is theirs.

docs/inbound-events.md describes the receivers, the credentials and the event types.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Account
from notifications.models import Job
from providers.names import EmailEventType, ProviderName


class TrackingCredentials(models.Model):
    """How each provider proves to one account's receivers that an event is its own."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="tracking_credentials")
    # Postmark's Basic Auth password, as a keyed digest: it is only ever compared, never sent.
    postmark_password_digest = models.CharField(max_length=64, blank=True, default="")
    # SendGrid's verification key (base64 DER, as SendGrid shows it): a public key, kept as given.
    sendgrid_verification_key = models.TextField(blank=True, default="")
    # Resend's Svix signing secret (whsec_...), encrypted: verifying a signature needs the plaintext.
    encrypted_resend_secret = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "tracking credentials"

    def __str__(self) -> str:
        return f"tracking credentials of {self.account_id}"


class EmailEvent(models.Model):
    """One event a provider reported for a message of one of the account's jobs."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="email_events")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="email_events")
    provider = models.CharField(max_length=16, choices=ProviderName.choices)
    type = models.CharField(max_length=16, choices=EmailEventType.choices)
    recipient = models.CharField(max_length=320, blank=True, default="")
    occurred_at = models.DateTimeField()
    # The provider's id for the event, or a digest of the event when it gives none; a provider
    # sending an event again sends the same id, and the constraint below stores it once.
    provider_event_id = models.CharField(max_length=255)
    # The event as the provider sent it (JSON), for support.
    payload = models.TextField()
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "provider", "provider_event_id"], name="one_email_event_per_provider_id"
            )
        ]
        indexes = [models.Index(fields=["job", "occurred_at"], name="email_event_job_time")]
        # Oldest first, as Get Job Status lists them.
        ordering = ["occurred_at", "id"]

    def __str__(self) -> str:
        return f"{self.type} from {self.provider} for {self.job_id}"
