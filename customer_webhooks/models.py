"""Webhooks an account sends to its own customers: an app per customer, the app's endpoints (each with its own
secret and the event types it takes), and the messages fanned out to them (docs/customer-webhooks.md).

A message's deliveries are webhook jobs (notifications.models.Job, with ``message`` and ``endpoint`` set): the
engine claims, signs, retries and records them as it does every job.
"""

from __future__ import annotations

import re
import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account
from core.model_fields import JSONTextField

# The most endpoints one app may have: each message is one delivery, and one quota unit, per subscribed endpoint.
ENDPOINTS_PER_APP = 20
URL_MAX_LENGTH = 2048
UID_MAX_LENGTH = 64
NAME_MAX_LENGTH = 200
DESCRIPTION_MAX_LENGTH = 500
EVENT_TYPE_MAX_LENGTH = 128
# An event type: lowercase segments of a-z, 0-9, _ and - joined by dots (``invoice.paid``), at most
# EVENT_TYPE_MAX_LENGTH characters; what an endpoint subscribes to and a message is sent as.
EVENT_TYPE_PATTERN = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
# The most event types one endpoint may name.
EVENT_TYPES_MAX = 50
EVENT_TYPE_RULE = f"lowercase segments of a-z, 0-9, _ and - joined by dots, at most {EVENT_TYPE_MAX_LENGTH} characters"
# An app's uid: the holder's own id for its customer, of characters that need no escaping in a URL's path.
APP_UID = re.compile(rf"[A-Za-z0-9._:-]{{1,{UID_MAX_LENGTH}}}")
APP_UID_RULE = f"1 to {UID_MAX_LENGTH} of A-Z, a-z, 0-9, ., _, : and -"
# The most deliveries a second an endpoint's rateLimit may ask for.
RATE_LIMIT_MAX = 1000


def is_event_type(value: object) -> bool:
    """Whether ``value`` is an event type by EVENT_TYPE_PATTERN and EVENT_TYPE_MAX_LENGTH."""
    return isinstance(value, str) and len(value) <= EVENT_TYPE_MAX_LENGTH and bool(EVENT_TYPE_PATTERN.fullmatch(value))


class App(models.Model):
    """One of the account's customers, as the account names it (``uid``, its own id for that customer)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="customer_apps", db_index=False)
    uid = models.CharField(max_length=UID_MAX_LENGTH, null=True, blank=True)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    created_at = models.DateTimeField(default=timezone.now)
    # Every consumer portal link made up to this time, and every session opened with one, is ended (the holder's
    # `End portal sessions`); null: none ended (docs/customer-webhooks.md, "Consumer portal").
    portal_revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "uid"], condition=Q(uid__isnull=False), name="app_uid_per_account"
            )
        ]
        # The list, newest first; also the account's lookups and its cascade.
        indexes = [models.Index(fields=["account", "-created_at"], name="app_account_recent")]

    def __str__(self) -> str:
        return f"app {self.uid or self.id}"


class Endpoint(models.Model):
    """An HTTPS URL of one app's customer, signed with a secret of its own, receiving the event types it chose."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="endpoints", db_index=False)
    # The URL with a ``user:password`` in it masked as ``***``; the credentials, encrypted, apart (as a webhook job's).
    url = models.CharField(max_length=URL_MAX_LENGTH)
    url_credentials = models.TextField(null=True, blank=True)
    # The event types it receives, as a JSON list in the order given; empty: every type.
    event_types = JSONTextField(default=list)
    description = models.CharField(max_length=DESCRIPTION_MAX_LENGTH, blank=True, default="")
    # At most this many deliveries a second reach it, across every worker; null: no limit.
    rate_limit = models.PositiveSmallIntegerField(null=True, blank=True)
    disabled = models.BooleanField(default=False)
    # Why it was disabled, when NotifyHub disabled it ("gone": it answered 410; "failing": nothing but failures for
    # ENDPOINT_DISABLE_AFTER_SECONDS); blank when enabled or disabled by the holder.
    disabled_reason = models.CharField(max_length=16, blank=True, default="")
    # Its signing secret, encrypted, and after a rotation the one it replaced, signing beside it until
    # ``previous_signs_until`` (as an account's, accounts.models.SigningSecret).
    encrypted_secret = models.TextField()
    previous_encrypted_secret = models.TextField(blank=True, default="")
    previous_signs_until = models.DateTimeField(null=True, blank=True)
    # When the current run of nothing but failed attempts began; null after a success.
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["app", "created_at"], name="endpoint_app_created")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"endpoint {self.url}"

    def receives(self, event_type: str) -> bool:
        return not self.event_types or event_type in self.event_types


class Message(models.Model):
    """One event the account sent to an app: fanned out as one webhook job per enabled endpoint taking its type."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+", db_index=False)
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="messages", db_index=False)
    event_type = models.CharField(max_length=EVENT_TYPE_MAX_LENGTH)
    payload = JSONTextField()
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    # Sent with a test key (docs/rules.md, "Test mode"): its deliveries send nothing, and only test keys see it.
    test = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # As a job's key: the account's within its mode (docs/rules.md, "Idempotency").
            models.UniqueConstraint(
                fields=["account", "test", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="unique_message_idempotency_key",
            )
        ]
        indexes = [
            models.Index(fields=["app", "test", "-created_at"], name="message_app_recent"),
            models.Index(fields=["app", "test", "event_type", "-created_at"], name="message_app_type_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} message {self.id}"
