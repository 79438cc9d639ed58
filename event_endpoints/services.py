"""Emitting events, and the account's endpoints for them (docs/event-endpoints.md).

An event is stored in the transaction of the change that causes it, with one delivery row per endpoint
subscribed to its type (the outbox): a crash loses none, and a change rolled back emits nothing. Each
delivery's task goes out once that transaction commits; one the broker does not take is left to the sweeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from accounts.models import Account, AuditAction
from accounts.services import audit_record
from core.crypto import encrypt
from core.errors import EventEndpointLimit
from core.signals import AccountEvent
from event_endpoints.models import ENDPOINTS_PER_ACCOUNT, Event, EventDelivery, EventEndpoint
from event_endpoints.queue import UNFINISHED, event_deliveries_enqueue
from notifications.delivery.http import split_credentials, url_for_audit


def events_emit(*, account_id: int, emitted: Sequence[AccountEvent]) -> list[EventDelivery]:
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
        # In the caller's transaction when there is one, without a savepoint: its rollback takes these rows too.
        with transaction.atomic(savepoint=False):
            Event.objects.bulk_create(events)
            EventDelivery.objects.bulk_create(deliveries)
            delivery_ids = [delivery.id for delivery in deliveries]
            transaction.on_commit(lambda: event_deliveries_enqueue(delivery_ids))
    return deliveries


def announced_store(*, account_id: int, events: Sequence[AccountEvent], **_: object) -> None:
    """The receiver of core.signals.account_events: stores what an app announced, as `events_emit` does."""
    events_emit(account_id=account_id, emitted=events)


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
        _lock_endpoints_of(account)
        if EventEndpoint.objects.filter(account=account).count() >= ENDPOINTS_PER_ACCOUNT:
            raise EventEndpointLimit()
        endpoint.save(force_insert=True)
        Account.objects.filter(pk=account.pk).update(has_event_endpoints=True)
        audit_record(account=account, action=AuditAction.EVENT_ENDPOINT_CREATED, target=_audit_target(endpoint))
    return endpoint


def endpoint_delete(endpoint: EventEndpoint) -> None:
    """Deletes the endpoint with its deliveries: a task on its way for one of them claims nothing."""
    with transaction.atomic():
        _lock_endpoints_of(endpoint.account)
        endpoint.delete()
        remaining = EventEndpoint.objects.filter(account=endpoint.account).exists()
        Account.objects.filter(pk=endpoint.account_id).update(has_event_endpoints=remaining)
        audit_record(
            account=endpoint.account, action=AuditAction.EVENT_ENDPOINT_DELETED, target=_audit_target(endpoint)
        )


def _audit_target(endpoint: EventEndpoint) -> str:
    """The endpoint's URL as the audit log names it: its origin, as endpoint health names a destination, and the rest
    masked."""
    return url_for_audit(endpoint.url)


def _lock_endpoints_of(account: Account) -> None:
    """Locks the account's row until the transaction ends: changes to its endpoints then take turns, so two at once
    cannot both add the fifth, nor leave ``has_event_endpoints`` saying what is no longer so."""
    Account.objects.select_for_update().filter(pk=account.pk).first()


def events_purge(*, created_before: datetime, batch_size: int = 1000) -> int:
    """Deletes the events created before ``created_before`` whose deliveries have all finished, with those
    deliveries, oldest first, a batch a transaction; returns how many. A run stopped between batches is finished by
    running it again."""
    waiting = EventDelivery.objects.filter(event=OuterRef("pk"), status__in=UNFINISHED)
    finished = Event.objects.filter(created_at__lt=created_before).exclude(Exists(waiting)).order_by("created_at")
    purged = 0
    while batch := list(finished.values_list("id", flat=True)[:batch_size]):
        with transaction.atomic():
            Event.objects.filter(id__in=batch).delete()
        purged += len(batch)
    return purged
