"""Messages: sending one to an app, fanned out as one webhook job per endpoint taking its type, reading them back,
and recovering an endpoint's failed deliveries (docs/customer-webhooks.md, "Messages").

A message's deliveries are webhook jobs: stored, retried and re-queued by notifications' services, which this
module calls with the message's and the endpoint's parts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.utils import timezone

from accounts.models import Account, AuditAction
from core.errors import DuplicateRequest, MessageNotFound
from customer_webhooks.models import App, Endpoint, Message
from customer_webhooks.services import endpoint_audit
from notifications.models import Job
from notifications.services import failed_jobs_retry, jobs_store_together, message_delivery_new

# Recover re-queues an endpoint's failed deliveries this many to a transaction, each page's tasks published once it
# commits: never one UPDATE of every failed delivery with no task sent for any.
RECOVER_PAGE = 500


@dataclass(frozen=True)
class MessageSent:
    """A message as stored, and its deliveries: one webhook job per enabled endpoint of its app taking its type."""

    message: Message
    deliveries: list[Job]


def message_send(
    *,
    account: Account,
    app: App,
    enabled_endpoints: Sequence[Endpoint],
    event_type: str,
    payload: dict[str, Any],
    idempotency_key: str | None = None,
    test: bool = False,
) -> MessageSent:
    """Stores the message and its deliveries, one to each of ``enabled_endpoints`` (the app's, as
    selectors.app_get_with_enabled_endpoints reads them) taking ``event_type``, in one transaction, the jobs in one
    multi-row INSERT with a quota unit each (a test message's take none), all or none; their tasks are published
    once it commits. A message no endpoint takes is stored alone.

    Raises DuplicateRequest when the account's message of this mode holds ``idempotency_key`` already, or the
    account's QuotaExceeded when its quota cannot cover every delivery; either way nothing is stored.
    """
    message = Message(
        account=account,
        app=app,
        event_type=event_type,
        payload=payload,
        idempotency_key=idempotency_key,
        test=test,
        created_at=timezone.now(),
    )
    deliveries = [_delivery(message, endpoint) for endpoint in enabled_endpoints if endpoint.receives(event_type)]
    with transaction.atomic():
        with _duplicate_answered(message):
            message.save(force_insert=True)
        if deliveries:
            # This transaction is the deliveries' all or none, and ends with any error their store raises.
            jobs_store_together(deliveries, tasks_at_commit=True, savepoint=False)
    return MessageSent(message, deliveries)


def _delivery(message: Message, endpoint: Endpoint) -> Job:
    """The message's webhook job to ``endpoint``, as docs/customer-webhooks.md, "Deliveries are webhook jobs",
    stores it; created when the message is, so the message's deliveries list with it."""
    job = message_delivery_new(
        account=message.account,
        message_id=message.id,
        endpoint_id=endpoint.id,
        payload={"url": endpoint.url, "method": "POST", "payload": message.payload, "eventType": message.event_type},
        url_credentials=endpoint.url_credentials,
        max_attempts=len(settings.MESSAGE_RETRY_DELAYS) + 1,
        rate_limit=endpoint.rate_limit,
        test=message.test,
    )
    job.created_at = message.created_at
    return job


@contextmanager
def _duplicate_answered(message: Message) -> Iterator[None]:
    """A message under a key the account's message of its mode holds, refused by the unique index: the client's
    DuplicateRequest, as for a job (docs/rules.md, "Idempotency")."""
    try:
        yield
    except IntegrityError:
        if message.idempotency_key is None:
            raise
        raise DuplicateRequest() from None


def message_list(
    *, app: App, test: bool, event_type: str | None, page: int, limit: int
) -> tuple[Sequence[Message], int]:
    """A page of the app's messages of mode ``test``, newest first, optionally of one event type; and how many
    there are in all."""
    messages = Message.objects.filter(app=app, test=test)
    if event_type is not None:
        messages = messages.filter(event_type=event_type)
    start = (page - 1) * limit
    newest_first = messages.order_by("-created_at", "-id").defer("payload")
    return list(newest_first[start : start + limit]), messages.count()


def message_get(*, app: App, message_id: str, test: bool) -> Message:
    """The app's message of mode ``test`` with its deliveries, in a stable order; any other is MessageNotFound."""
    parsed = _uuid_or_none(message_id)
    deliveries = Prefetch("deliveries", queryset=Job.objects.order_by("created_at", "id").defer("payload"))
    found = (
        Message.objects.filter(id=parsed, app=app, test=test).prefetch_related(deliveries).first() if parsed else None
    )
    if found is None:
        raise MessageNotFound()
    return found


def _uuid_or_none(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def recover_since_refusal(since: datetime) -> str | None:
    """Why a recover cannot start at ``since``, worded to follow the field's name; None when it can: not in the
    future, and not before the oldest job JOB_RETENTION_DAYS keeps."""
    now = timezone.now()
    if since > now:
        return "must not be in the future"
    days = settings.JOB_RETENTION_DAYS
    if days and since < now - timedelta(days=days):
        return f"must be within the last {days} days"
    return None


def endpoint_recover(*, account: Account, endpoint: Endpoint, since: datetime, test: bool) -> int:
    """Re-queues the endpoint's failed deliveries of mode ``test`` created since ``since``, by Retry Job's rules
    (docs/rules.md, "Retry Job"), RECOVER_PAGE at a time, each page's tasks published once it commits; returns how
    many it re-queued. A recovery that re-queued any is audit-logged (``endpoint.recovered``)."""
    pages = failed_jobs_retry(
        account=account, endpoint_id=endpoint.id, created_since=since, test=test, batch_size=RECOVER_PAGE
    )
    requeued = sum(page.requeued for page in pages)
    if requeued:  # a recovery that found nothing to send again changed nothing
        endpoint_audit(endpoint, AuditAction.ENDPOINT_RECOVERED)
    return requeued
