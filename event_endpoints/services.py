"""Emitting events, and the account's endpoints for them (docs/event-endpoints.md).

An event is stored in the transaction of the change that causes it, with one delivery row per endpoint
subscribed to its type (the outbox): a crash loses none, and a change rolled back emits nothing. Each
delivery's task goes out once that transaction commits; one the broker does not take is left to the sweeper.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from core.api.envelope import iso_utc
from core.crypto import encrypt
from core.errors import EventEndpointLimit
from event_endpoints.models import ENDPOINTS_PER_ACCOUNT, Event, EventDelivery, EventEndpoint, EventType
from event_endpoints.queue import event_deliveries_enqueue
from notifications.delivery.http import split_credentials
from notifications.engine.transitions import NextState
from notifications.models import Job, JobStatus
from notifications.serializers import JobSlimSerializer
from providers.names import EmailEventType
from suppressions.models import Suppression
from suppressions.serializers import SuppressionSerializer


@dataclass(frozen=True)
class Emitted:
    """An event about to be stored: its type and the ``data`` its receivers get."""

    type: EventType
    data: dict[str, Any]


def events_emit(*, account_id: int, emitted: Sequence[Emitted]) -> list[EventDelivery]:
    """Stores the events that an endpoint of the account is subscribed to, and their deliveries, in the caller's
    transaction (or one of their own); returns the deliveries. An event no endpoint receives is not stored."""
    endpoints = list(EventEndpoint.objects.filter(account_id=account_id)) if emitted else []
    now = timezone.now()
    requeue_at = now + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)
    events: list[Event] = []
    deliveries: list[EventDelivery] = []
    for entry in emitted:
        receivers = [endpoint for endpoint in endpoints if endpoint.receives(entry.type)]
        if not receivers:
            continue
        event = Event(account_id=account_id, type=entry.type, data=entry.data, created_at=now)
        events.append(event)
        deliveries += [
            EventDelivery(event=event, endpoint=endpoint, created_at=now, requeue_at=requeue_at)
            for endpoint in receivers
        ]
    if deliveries:
        with transaction.atomic():
            Event.objects.bulk_create(events)
            EventDelivery.objects.bulk_create(deliveries)
            delivery_ids = [delivery.id for delivery in deliveries]
            transaction.on_commit(lambda: event_deliveries_enqueue(delivery_ids))
    return deliveries


def job_finished_emit(job: Job, finished: NextState) -> None:
    """``job.completed`` or ``job.failed`` for a job that ``finished`` ends; its data is the job as the jobs list
    shows it then."""
    data = JobSlimSerializer(_with_state(job, finished)).data
    event_type = EventType.JOB_COMPLETED if finished.status == JobStatus.COMPLETED else EventType.JOB_FAILED
    events_emit(account_id=job.account_id, emitted=[Emitted(event_type, dict(data))])


@dataclass(frozen=True)
class EmailEventEmitted:
    """A provider's event about one of the account's emails, newly stored."""

    type: EmailEventType
    job_id: uuid.UUID
    recipient: str
    provider: str
    occurred_at: datetime


def email_events_emit(*, account_id: int, stored: Sequence[EmailEventEmitted]) -> None:
    """``email.<type>`` for each newly stored provider event (docs/inbound-events.md names the types)."""
    emitted = [
        Emitted(
            EventType(f"email.{event.type.lower()}"),
            {
                "jobId": str(event.job_id),
                "recipient": event.recipient,
                "provider": event.provider,
                "occurredAt": iso_utc(event.occurred_at),
            },
        )
        for event in stored
    ]
    events_emit(account_id=account_id, emitted=emitted)


def suppressions_created_emit(*, account_id: int, created: Sequence[Suppression]) -> None:
    """``suppression.created`` for each address newly on the list; its data is the address as the list shows it."""
    emitted = [Emitted(EventType.SUPPRESSION_CREATED, dict(SuppressionSerializer(row).data)) for row in created]
    events_emit(account_id=account_id, emitted=emitted)


def _with_state(job: Job, state: NextState) -> Job:
    """A copy of ``job`` in ``state``: ``job`` itself keeps the state its caller knows."""
    copy = Job(**{field.attname: getattr(job, field.attname) for field in Job._meta.concrete_fields})
    for name, value in state.columns().items():
        setattr(copy, name, value)
    return copy


def endpoint_create(*, account: Account, url: str, events: Sequence[str]) -> EventEndpoint:
    """Adds an endpoint receiving ``events`` (validated types, kept in the order given, each once)."""
    masked_url, credentials = split_credentials(url)
    endpoint = EventEndpoint(
        account=account,
        url=masked_url,
        url_credentials=encrypt(credentials) if credentials else None,
        events=list(dict.fromkeys(events)),
    )
    with transaction.atomic():
        # The account's row, locked, serialises its endpoint creations: two at once cannot both be the fifth.
        Account.objects.select_for_update().filter(pk=account.pk).first()
        if EventEndpoint.objects.filter(account=account).count() >= ENDPOINTS_PER_ACCOUNT:
            raise EventEndpointLimit()
        endpoint.save(force_insert=True)
    return endpoint


def endpoint_delete(endpoint: EventEndpoint) -> None:
    """Deletes the endpoint with its deliveries: a task on its way for one of them claims nothing."""
    endpoint.delete()
