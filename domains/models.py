from __future__ import annotations

from django.db import models

from accounts.models import Account
from providers.names import ProviderName

# NotifyHub sends from this subdomain of the customer's domain (docs/rules.md, "Sender domains").
SENDING_SUBDOMAIN = "em"


class DomainStatus(models.TextChoices):
    PENDING = "pending_verification"
    VERIFIED = "verified"


class SenderDomain(models.Model):
    """A paid account's own sending domain; one per account at a time."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="sender_domain")
    name = models.CharField(max_length=253)
    status = models.CharField(max_length=24, choices=DomainStatus.choices, default=DomainStatus.PENDING)
    # Providers that could not take part, and why: [{"provider": ..., "reason": ...}].
    warnings = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    verified_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def sending_name(self) -> str:
        return f"{SENDING_SUBDOMAIN}.{self.name}"


class DomainRegistration(models.Model):
    """The sending domain as registered with one provider, and the DNS records that provider asks for."""

    domain = models.ForeignKey(SenderDomain, on_delete=models.CASCADE, related_name="registrations")
    provider = models.CharField(max_length=16, choices=ProviderName.choices)
    provider_domain_id = models.CharField(max_length=64)
    records = models.JSONField(default=list)
    verified = models.BooleanField(default=False)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["domain", "provider"], name="one_registration_per_provider")]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.domain.sending_name} at {self.provider}"
