"""What an app announces to the apps that build on it, without importing them (docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.dispatch import Signal


@dataclass(frozen=True)
class AccountEvent:
    """Something that happened to an account, as its event endpoints receive it (docs/event-endpoints.md): a type
    such as ``job.completed``, and its ``data``, built by the app the change belongs to as its API shows the thing."""

    type: str
    data: dict[str, Any]


# Sent with ``account_id`` and ``events`` (AccountEvent, in order) inside the transaction of the change itself, so
# what a receiver stores commits or rolls back with it. A receiver's error undoes the change: send, never
# send_robust. Senders that know the account has no event endpoints (Account.has_event_endpoints) need not send.
account_events = Signal()


def announce(*, account_id: int, events: list[AccountEvent]) -> None:
    if events:
        account_events.send(sender=AccountEvent, account_id=account_id, events=events)
