from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import date

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.plans import Plan, PlanLimits, limits_for
from providers.names import ProviderName

# The most requests a minute per key an account may be given: a rate limit still, and within the column.
MAX_RATE_LIMIT = 1_000_000
# The longest product name the holder may give its customers (Account.product_name).
PRODUCT_NAME_MAX_LENGTH = 100


def today() -> date:
    return timezone.now().date()


class Account(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    # The id the account goes by outside: in the provider-event receiver URLs, never the database key.
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    plan = models.CharField(max_length=16, choices=Plan.choices, default=Plan.FREE)
    # The quota cycle is anchored on this day (see accounts/billing.py).
    plan_started_on = models.DateField(default=today)
    # Set by staff for one account: replaces the plan's monthly quota (docs/rules.md, "Limits").
    monthly_limit = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    # Set by staff or an operator for one account: requests a minute per key in place of the plan's rate limit
    # (docs/rules.md, "Limits"). Read with the key, in its one lookup (accounts.selectors.ACCOUNT_FIELDS).
    rate_limit = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(MAX_RATE_LIMIT)]
    )
    is_active = models.BooleanField(default=True)
    # Set when the holder follows the sign-up email's link; until then no API key can be made.
    # Accounts made by operators (manage.py createaccount) start confirmed.
    email_confirmed_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Whether the account has an event endpoint, kept by event_endpoints as endpoints come and go: a job's claim
    # and a provider's events read it with the account, so an account without endpoints announces nothing
    # (docs/event-endpoints.md). The database's default lets the release before it go on inserting accounts.
    has_event_endpoints = models.BooleanField(default=False, db_default=False)
    # A new random value in the transaction of every change to the account's templates (None: none ever changed),
    # read with the API key: a web process keeps the templates it resolved while it is the same
    # (docs/templates.md, "Sending with a template").
    templates_stamp = models.UUIDField(null=True, blank=True, editable=False)
    # The holder's product as its customers know it, on every page of the consumer portal; blank: the portal names
    # none (docs/customer-webhooks.md, "Consumer portal"). The database's default lets the release before it insert.
    product_name = models.CharField(max_length=PRODUCT_NAME_MAX_LENGTH, blank=True, default="", db_default="")

    def __str__(self) -> str:
        return f"{self.user.email} ({self.plan})"

    @property
    def limits(self) -> PlanLimits:
        """The plan's limits, with the account's own monthly limit and rate limit in place of the plan's quota and
        rate where staff set them."""
        plan_limits = limits_for(self.plan)
        if self.monthly_limit is None and self.rate_limit is None:
            return plan_limits
        return replace(
            plan_limits,
            monthly_quota=plan_limits.monthly_quota if self.monthly_limit is None else self.monthly_limit,
            requests_per_minute=plan_limits.requests_per_minute if self.rate_limit is None else self.rate_limit,
        )

    @property
    def is_confirmed(self) -> bool:
        return self.email_confirmed_at is not None

    @property
    def is_usable(self) -> bool:
        return self.is_active and self.deleted_at is None


class KeyScope(models.TextChoices):
    """What an API key may call (docs/rules.md, "API keys and scopes")."""

    FULL = "full", "Full access"
    SEND = "send", "Send only"
    READ = "read", "Read only"


class KeyMode(models.TextChoices):
    """Whether an API key's sends go out (docs/rules.md, "Test mode"): a test key's jobs run every rule, send
    nothing, spend no quota, and are seen only by test keys."""

    LIVE = "live", "Live"
    TEST = "test", "Test"


# The name of an account's first key, and of every key made before keys had names.
DEFAULT_KEY_NAME = "Default"
MAX_ACTIVE_API_KEYS = 10
API_KEY_NAME_MAX_LENGTH = 64


class ApiKey(models.Model):
    """An API key, kept only as its SHA-256 digest; the plaintext is shown once. An account has up to
    MAX_ACTIVE_API_KEYS active ones, each named."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="api_keys")
    digest = models.CharField(max_length=64, unique=True)
    # The first characters of the key, so a holder can tell keys apart in the dashboard.
    hint = models.CharField(max_length=16)
    # The holder's name for it ("CI", "billing service"): unique among the account's active keys. The database's
    # defaults let the release before these columns go on issuing keys while the migrations run.
    name = models.CharField(max_length=API_KEY_NAME_MAX_LENGTH, default=DEFAULT_KEY_NAME, db_default=DEFAULT_KEY_NAME)
    scope = models.CharField(max_length=8, choices=KeyScope.choices, default=KeyScope.FULL, db_default=KeyScope.FULL)
    mode = models.CharField(max_length=8, choices=KeyMode.choices, default=KeyMode.LIVE, db_default=KeyMode.LIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    # When a request last used it, to the minute: written at most once a minute a key.
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "name"], condition=Q(revoked_at__isnull=True), name="unique_active_api_key_name"
            )
        ]

    def __str__(self) -> str:
        return f"{self.hint}… ({'revoked' if self.revoked_at else 'active'})"

    @property
    def is_test(self) -> bool:
        return self.mode == KeyMode.TEST


class UsagePeriod(models.Model):
    """Notifications counted against the quota in one billing cycle."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="usage_periods")
    period_start = models.DateField()
    used = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "period_start"], name="one_usage_row_per_period")]

    def __str__(self) -> str:
        return f"{self.account_id} from {self.period_start}: {self.used}"


class SigningSecret(models.Model):
    """The account's webhook signing secret, encrypted: deliveries need the plaintext to sign."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="signing_secret")
    encrypted_secret = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    # After a rotation, the secret it replaced, encrypted: it signs beside the new one until ``previous_signs_until``,
    # so a receiver not yet given the new secret keeps verifying (docs/delivery-engine.md, "Rotating the secret").
    previous_encrypted_secret = models.TextField(blank=True, default="", db_default="")
    previous_signs_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"signing secret of {self.account_id}"

    @property
    def previous_still_signs(self) -> bool:
        return self.previous_signs_until is not None and self.previous_signs_until > timezone.now()


class ProviderKey(models.Model):
    """An account's own credentials for one email provider; lower priority is tried first."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="provider_keys")
    provider = models.CharField(max_length=16, choices=ProviderName.choices)
    encrypted_api_key = models.TextField()
    # Postmark's account-level token, used only for domain operations.
    encrypted_account_token = models.TextField(blank=True, default="")
    priority = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "provider"], name="one_key_per_provider")]
        ordering = ["priority", "created_at"]

    def __str__(self) -> str:
        return f"{self.provider} key of {self.account_id} (priority {self.priority})"


class AuditAction(models.TextChoices):
    """What an audit entry says was changed (docs/rules.md, "Audit log")."""

    API_KEY_CREATED = "api_key.created", "API key created"
    API_KEY_REVOKED = "api_key.revoked", "API key revoked"
    PROVIDER_KEY_ADDED = "provider_key.added", "Provider key added"
    PROVIDER_KEY_REMOVED = "provider_key.removed", "Provider key removed"
    PROVIDER_KEY_REORDERED = "provider_key.reordered", "Provider keys reordered"
    DOMAIN_REQUESTED = "domain.requested", "Domain requested"
    DOMAIN_VERIFIED = "domain.verified", "Domain verified"
    DOMAIN_DELETED = "domain.deleted", "Domain deleted"
    SIGNING_SECRET_GENERATED = "signing_secret.generated", "Signing secret generated"
    SIGNING_SECRET_ROTATED = "signing_secret.rotated", "Signing secret rotated"
    SIGNING_SECRET_DELETED = "signing_secret.deleted", "Signing secret deleted"
    TRACKING_CREDENTIAL_SET = "tracking_credential.set", "Event tracking credential set"
    EVENT_ENDPOINT_CREATED = "event_endpoint.created", "Event endpoint created"
    EVENT_ENDPOINT_DELETED = "event_endpoint.deleted", "Event endpoint deleted"
    SUPPRESSION_ADDED = "suppression.added", "Suppression added"
    SUPPRESSION_REMOVED = "suppression.removed", "Suppression removed"
    TEMPLATE_CREATED = "template.created", "Template created"
    TEMPLATE_UPDATED = "template.updated", "Template updated"
    TEMPLATE_DELETED = "template.deleted", "Template deleted"
    APP_CREATED = "app.created", "App created"
    APP_UPDATED = "app.updated", "App updated"
    APP_DELETED = "app.deleted", "App deleted"
    ENDPOINT_CREATED = "endpoint.created", "Endpoint created"
    ENDPOINT_UPDATED = "endpoint.updated", "Endpoint updated"
    ENDPOINT_DELETED = "endpoint.deleted", "Endpoint deleted"
    ENDPOINT_SECRET_ROTATED = "endpoint.secret_rotated", "Endpoint secret rotated"
    # Not a change, but whoever read the secret can sign as NotifyHub does.
    ENDPOINT_SECRET_REVEALED = "endpoint.secret_revealed", "Endpoint secret revealed"
    ENDPOINT_RECOVERED = "endpoint.recovered", "Endpoint deliveries recovered"
    PORTAL_LINK_CREATED = "portal_link.created", "Portal link created"
    PORTAL_LINKS_REVOKED = "portal_links.revoked", "Portal links revoked"
    PRODUCT_NAME_CHANGED = "product_name.changed", "Product name changed"
    PLAN_CHANGED = "plan.changed", "Plan changed"
    # The monthly limit or the rate limit: the target says which (docs/rules.md, "Audit log").
    LIMIT_CHANGED = "limit.changed", "Limit changed"
    ACCOUNT_DELETED = "account.deleted", "Account deleted"
    ACCOUNT_RESTORED = "account.restored", "Account restored"


# What an entry's target holds at most: an event endpoint's URL, the longest thing one names.
AUDIT_TARGET_MAX_LENGTH = 2048


class AuditEntry(models.Model):
    """One change to an account: what, who made it, on what, from where, when. Never a key, a secret, a token or a
    password (docs/rules.md, "Audit log")."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="audit_entries")
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    # "holder", "operator", "staff:<username>" or "portal:<app uid or id>" (core/actor.py).
    actor = models.CharField(max_length=160)
    # A key's name, a provider, a domain, an endpoint's URL (credentials masked), an address, a plan, a limit; empty
    # for what the account has one of (its signing secret, itself).
    target = models.CharField(max_length=AUDIT_TARGET_MAX_LENGTH, blank=True)
    # The client's address; none for a change made outside a request (an operator's).
    ip = models.GenericIPAddressField(null=True, blank=True)
    # The API key the holder made the change with; none for the dashboard's session, staff and the operator.
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["account", "-created_at"], name="audit_account_recent")]
        # Newest first, as the API, the dashboard and the admin list them.
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.action} by {self.actor}"

    @property
    def api_key_label(self) -> str:
        """The API key the change was made with, as the dashboard and the admin name it: ``API key “CI” (test)``;
        empty when there was none."""
        return f"API key “{self.api_key.name}” ({self.api_key.mode})" if self.api_key else ""
