"""Adding addresses to an account's suppression list and taking them off (docs/suppressions.md)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from accounts.models import Account, AuditAction
from accounts.services import audit_record
from core.errors import AddressSuppressed, SuppressionNotFound
from core.signals import AccountEvent, announce
from suppressions.models import Suppression, SuppressionReason
from suppressions.selectors import may_be_listed, normalized_address
from suppressions.serializers import SuppressionSerializer


def suppressed_message(reason: str) -> str:
    """The error of an email job to a suppressed address (docs/suppressions.md)."""
    return f"Recipient is on the suppression list ({reason})"


def suppression_add(*, account: Account, email: str, topic: str | None = None) -> Suppression:
    """Adds ``email`` by hand, for ``topic``'s emails or (None) every email; an entry already there for the same
    address and topic, for any reason, is a conflict."""
    suppression = Suppression(
        account=account, email=normalized_address(email), topic=topic, reason=SuppressionReason.MANUAL
    )
    try:
        with transaction.atomic():
            suppression.save(force_insert=True)
            _created_announce(account.pk, [suppression])
            audit_record(account=account, action=AuditAction.SUPPRESSION_ADDED, target=suppression.email)
    except IntegrityError:
        raise AddressSuppressed() from None
    return suppression


@transaction.atomic
def suppression_remove(*, account: Account, email: str, topic: str | None = None) -> None:
    """Takes ``email``'s entry for ``topic`` (None: the one for every email) off the list, whatever put it there:
    the account may email it again, unless another entry of the address stops that email."""
    if not may_be_listed(email):
        raise SuppressionNotFound()
    address = normalized_address(email)
    deleted, _ = Suppression.objects.filter(account=account, email=address, topic=topic).delete()
    if not deleted:
        raise SuppressionNotFound()
    audit_record(account=account, action=AuditAction.SUPPRESSION_REMOVED, target=address)


@dataclass(frozen=True)
class Reported:
    """An address a provider's event says must never be mailed again."""

    email: str
    reason: SuppressionReason
    provider: str
    job_id: uuid.UUID
    # The topic the entry is for: its job's, for an unsubscribe; None (every email) for a bounce or a complaint.
    topic: str | None = None


def suppressions_record(*, account: Account, reported: Sequence[Reported], emits_events: bool) -> None:
    """Adds each reported address that is not on the list yet for its topic, with ``emits_events`` emitting its
    ``suppression.created``; one already there keeps its first reason. Two reports adding one address at the same
    instant both emit its event."""
    rows = {
        (normalized_address(entry.email), entry.topic): Suppression(
            account=account,
            email=normalized_address(entry.email),
            topic=entry.topic,
            reason=entry.reason,
            provider=entry.provider,
            job_id=entry.job_id,
        )
        for entry in reversed(reported)  # the first report of an address wins, as it would one at a time
        if entry.email
    }
    if not emits_events:
        Suppression.objects.bulk_create(rows.values(), ignore_conflicts=True)
        return
    addresses = {email for email, _ in rows}
    listed = set(Suppression.objects.filter(account=account, email__in=addresses).values_list("email", "topic"))
    created = [row for key, row in rows.items() if key not in listed]
    Suppression.objects.bulk_create(created, ignore_conflicts=True)
    _created_announce(account.pk, created)


def suppression_unsubscribe(*, account_id: int, email: str, topic: str) -> None:
    """The recipient's own one-click unsubscribe from the account's ``topic`` (docs/suppressions.md, "One-click
    unsubscribe"): one insert, reason UNSUBSCRIBED and no provider; nothing more when the address has an entry for
    the topic already, whatever its reason, or when the account is gone. Not in the audit log, which records the
    holder's changes: the recipient's are on the list, as a provider's unsubscribe events are."""
    suppression = Suppression(account_id=account_id, email=email, topic=topic, reason=SuppressionReason.UNSUBSCRIBED)
    try:
        with transaction.atomic():
            suppression.save(force_insert=True)
            _created_announce(account_id, [suppression])
    except IntegrityError:
        return  # there already (or its account was erased: then nothing is sent to it either)


def suppression_resubscribe(*, account_id: int, email: str, topic: str) -> None:
    """Undoes the recipient's unsubscribe from ``topic``: takes off the address's entry for the topic if an
    unsubscribe put it there, never one the holder added or a bounce or complaint's entry for every email."""
    Suppression.objects.filter(
        account_id=account_id, email=email, topic=topic, reason=SuppressionReason.UNSUBSCRIBED
    ).delete()


def _created_announce(account_id: int, created: Sequence[Suppression]) -> None:
    """``suppression.created`` for each address newly on the list, as the list shows it (docs/event-endpoints.md)."""
    events = [AccountEvent("suppression.created", dict(SuppressionSerializer(row).data)) for row in created]
    announce(account_id=account_id, events=events)
