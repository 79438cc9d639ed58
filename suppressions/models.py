"""The addresses an account's email is never sent to again (docs/suppressions.md)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account
from providers.names import ProviderName

# RFC 5321's longest path, as the send endpoint's `to` allows.
ADDRESS_MAX_LENGTH = 320
# An email's topic: 1 to 64 of a-z, 0-9, _ and - (docs/suppressions.md, "Topics").
TOPIC_MAX_LENGTH = 64


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
    # The topic whose emails the address is off; null for every email of the account (docs/suppressions.md, "Topics").
    topic = models.CharField(max_length=TOPIC_MAX_LENGTH, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # One entry per address and topic. Its index is the send's and the attempt's lookup: (account, address)
            # leads it, so an address's entries for every email and for one topic are read in one index scan.
            models.UniqueConstraint(fields=["account", "email", "topic"], name="one_suppression_per_address_topic"),
            # NULLs are distinct in a unique index on PostgreSQL and SQLite alike: the entry for every email has an
            # index of its own to stay one per address.
            models.UniqueConstraint(
                fields=["account", "email"], condition=Q(topic__isnull=True), name="one_suppression_per_address"
            ),
        ]
        indexes = [models.Index(fields=["account", "-created_at"], name="suppression_account_recent")]
        # Newest first, as the API and the dashboard list them.
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.email} ({self.reason})" if self.topic is None else f"{self.email} ({self.reason}, {self.topic})"
