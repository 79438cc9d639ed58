"""Where an account's events are pushed, the events themselves, and each one's delivery to each endpoint
(docs/event-endpoints.md)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account
from core.model_fields import JSONTextField

# The most endpoints one account may have: each event is one delivery per subscribed endpoint.
ENDPOINTS_PER_ACCOUNT = 5
URL_MAX_LENGTH = 2048


class EventType(models.TextChoices):
    JOB_COMPLETED = "job.completed"
    JOB_FAILED = "job.failed"
    EMAIL_DELIVERED = "email.delivered"
    EMAIL_OPENED = "email.opened"
    EMAIL_CLICKED = "email.clicked"
    EMAIL_BOUNCED = "email.bounced"
    EMAIL_SPAM_REPORT = "email.spam_report"
    EMAIL_UNSUBSCRIBED = "email.unsubscribed"
    EMAIL_DEFERRED = "email.deferred"
    SUPPRESSION_CREATED = "suppression.created"
    ENDPOINT_FAILING = "endpoint.failing"
    ENDPOINT_DISABLED = "endpoint.disabled"


class EventEndpoint(models.Model):
    """An HTTPS URL of the account's that receives the events of the types it subscribed to."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="event_endpoints")
    # The URL with a ``user:password`` in it masked as ``***``; the credentials, encrypted, apart (as a webhook job's).
    url = models.CharField(max_length=URL_MAX_LENGTH)
    url_credentials = models.TextField(null=True, blank=True)
    # The event types it receives, as a JSON list of EventType values in the order the holder gave them.
    events = JSONTextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["account", "created_at"], name="event_endpoint_account")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"event endpoint {self.url}"

    def receives(self, event_type: str) -> bool:
        return event_type in self.events


class Event(models.Model):
    """Something that happened to an account, stored in the transaction of the change itself (an outbox row):
    a crash loses none, and a transaction that is rolled back and tried again leaves only the one it committed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=32, choices=EventType.choices)
    # The event's ``data`` as its receivers get it (docs/event-endpoints.md, "Events").
    data = JSONTextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # Retention deletes the oldest first (event_endpoints.services.events_purge).
        indexes = [models.Index(fields=["created_at"], name="event_created")]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class EventDeliveryStatus(models.TextChoices):
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class EventDelivery(models.Model):
    """One event on its way to one endpoint: claimed, attempted and retried as a webhook job is
    (docs/job-states.md), with the same columns for the same purposes, but never listed with jobs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    # Deleting an endpoint deletes its deliveries: one queued for it then claims nothing.
    endpoint = models.ForeignKey(EventEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=12, choices=EventDeliveryStatus.choices, default=EventDeliveryStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claims = models.PositiveSmallIntegerField(default=0)
    error_message = models.TextField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The columns of a job's state (notifications/engine/transitions.py), so the same transitions write them.
    completed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    locked_until = models.DateTimeField(null=True, blank=True)
    requeue_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="event_delivery_endpoint_recent"),
            models.Index(fields=["requeue_at"], condition=Q(requeue_at__isnull=False), name="event_delivery_due"),
        ]
        verbose_name_plural = "event deliveries"

    def __str__(self) -> str:
        return f"event {self.event_id} to {self.endpoint_id}: {self.status}"
