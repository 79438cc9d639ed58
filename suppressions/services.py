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


def suppression_add(*, account: Account, email: str) -> Suppression:
    """Adds ``email`` by hand; an address already on the list, for any reason, is a conflict."""
    suppression = Suppression(account=account, email=normalized_address(email), reason=SuppressionReason.MANUAL)
    try:
        with transaction.atomic():
            suppression.save(force_insert=True)
            _created_announce(account, [suppression])
            audit_record(account=account, action=AuditAction.SUPPRESSION_ADDED, target=suppression.email)
    except IntegrityError:
        raise AddressSuppressed() from None
    return suppression


@transaction.atomic
def suppression_remove(*, account: Account, email: str) -> None:
    """Takes ``email`` off the list, whatever put it there: the account may email it again."""
    if not may_be_listed(email):
        raise SuppressionNotFound()
    address = normalized_address(email)
    deleted, _ = Suppression.objects.filter(account=account, email=address).delete()
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


def suppressions_record(*, account: Account, reported: Sequence[Reported], emits_events: bool) -> None:
    """Adds each reported address that is not on the list yet, with ``emits_events`` emitting its
    ``suppression.created``; one already there keeps its first reason. Two reports adding one address at the same
    instant both emit its event."""
    rows = {
        normalized_address(entry.email): Suppression(
            account=account,
            email=normalized_address(entry.email),
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
    listed = set(Suppression.objects.filter(account=account, email__in=list(rows)).values_list("email", flat=True))
    created = [row for email, row in rows.items() if email not in listed]
    Suppression.objects.bulk_create(created, ignore_conflicts=True)
    _created_announce(account, created)


def _created_announce(account: Account, created: Sequence[Suppression]) -> None:
    """``suppression.created`` for each address newly on the list, as the list shows it (docs/event-endpoints.md)."""
    events = [AccountEvent("suppression.created", dict(SuppressionSerializer(row).data)) for row in created]
    announce(account_id=account.pk, events=events)
