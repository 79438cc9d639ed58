"""The addresses an account's email is never sent to again (docs/suppressions.md)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Account
from providers.names import ProviderName

# RFC 5321's longest path, as the send endpoint's `to` allows.
ADDRESS_MAX_LENGTH = 320


class SuppressionReason(models.TextChoices):
    HARD_BOUNCE = "HARD_BOUNCE"
    SPAM_REPORT = "SPAM_REPORT"
    UNSUBSCRIBED = "UNSUBSCRIBED"
    MANUAL = "MANUAL"


class Suppression(models.Model):
    """One address of one account that no email goes to, and why it is there."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="suppressions")
    # Stored in lower case: the list compares addresses without case, through the unique index below.
    email = models.CharField(max_length=ADDRESS_MAX_LENGTH)
    reason = models.CharField(max_length=16, choices=SuppressionReason.choices)
    # The provider whose event added the address; none for an address added by hand.
    provider = models.CharField(max_length=16, choices=ProviderName.choices, null=True, blank=True)
    # The job whose event added it: an id, not a foreign key, because finished jobs are purged and the reason stays.
    job_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "email"], name="one_suppression_per_address")]
        indexes = [models.Index(fields=["account", "-created_at"], name="suppression_account_recent")]
        # Newest first, as the API and the dashboard list them.
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.email} ({self.reason})"
