"""Every stored secret re-encrypted with the newest of ``FIELD_ENCRYPTION_KEYS``: ``manage.py rotatekeys``
(docs/operations.md, "Rotating the encryption keys").

It lives in ``staff`` because the encrypted columns are spread over the apps, and ``staff`` is the app that may use
every other (docs/architecture.md, "Rules between packages").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cryptography.fernet import InvalidToken
from django.db import models, transaction
from django.db.models import Q

from accounts.models import ProviderKey, SigningSecret
from core.crypto import reencrypt
from customer_webhooks.models import Endpoint
from event_endpoints.models import EventEndpoint
from notifications.models import Job
from webhooks_inbound.models import TrackingCredentials

Column = tuple[type[models.Model], str]

# Every column holding a secret encrypted with core/crypto.py: a new one is one more line here. The tests
# (tests/staff/test_rotatekeys.py, ``store_every_secret``) store a secret through each service that encrypts one
# and fail on an encrypted value found in a column this does not list.
ENCRYPTED_COLUMNS: list[Column] = [
    (ProviderKey, "encrypted_api_key"),
    (ProviderKey, "encrypted_account_token"),
    (SigningSecret, "encrypted_secret"),
    (SigningSecret, "previous_encrypted_secret"),
    (Job, "url_credentials"),
    (Job, "secret_headers"),
    (TrackingCredentials, "encrypted_resend_secret"),
    (EventEndpoint, "url_credentials"),
    (Endpoint, "url_credentials"),
    (Endpoint, "encrypted_secret"),
    (Endpoint, "previous_encrypted_secret"),
]


class Outcome(StrEnum):
    REENCRYPTED = "re-encrypted"
    CURRENT = "already under the newest key"
    # Its holder set a new secret (under the newest key) or the row went between the read and the write.
    CHANGED = "changed since read"
    # No listed key made it: the service cannot read it either, so it is left for a person to look at.
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class RotatedBatch:
    column: str
    # Each row's primary key and what became of its secret.
    outcomes: dict[Any, Outcome]


def column_name(column: Column) -> str:
    """``table.column``, as the database names it."""
    model, field = column
    stored_in = model._meta.get_field(field)
    assert isinstance(stored_in, models.Field)  # a column of the model's own, not a relation
    return f"{model._meta.db_table}.{stored_in.column}"


def holding_secret(column: Column) -> models.QuerySet[Any]:
    """The rows with a secret in the column; an empty one is NULL or '', whichever its field allows."""
    model, field = column
    return model._base_manager.exclude(Q(**{f"{field}__isnull": True}) | Q(**{field: ""}))


def secrets_count() -> int:
    return sum(holding_secret(column).count() for column in ENCRYPTED_COLUMNS)


def secrets_reencrypt(*, batch_size: int) -> Iterator[RotatedBatch]:
    """Re-encrypts every secret of ENCRYPTED_COLUMNS with the newest key, a batch per transaction; yields what each
    batch did once it is committed.

    A row is written only if its column still holds what was read, so a secret its holder set meanwhile stays. A
    secret the newest key made is left as it is, so a run stopped between batches is finished by running it again.
    """
    for column in ENCRYPTED_COLUMNS:
        for batch in _batches(column, size=batch_size):
            with transaction.atomic():
                outcomes = {pk: _reencrypt_row(column, pk, token) for pk, token in batch}
            yield RotatedBatch(column=column_name(column), outcomes=outcomes)


def _batches(column: Column, *, size: int) -> Iterator[list[tuple[Any, str]]]:
    """(primary key, token) of each row holding a secret, ``size`` rows at a time in key order."""
    rows = holding_secret(column).order_by("pk").values_list("pk", column[1])
    batch = list(rows[:size])
    while batch:
        yield batch
        batch = list(rows.filter(pk__gt=batch[-1][0])[:size])


def _reencrypt_row(column: Column, pk: Any, token: str) -> Outcome:
    try:
        fresh = reencrypt(token)
    except InvalidToken:
        return Outcome.UNREADABLE
    if fresh is None:
        return Outcome.CURRENT
    model, field = column
    written = model._base_manager.filter(pk=pk, **{field: token}).update(**{field: fresh})
    return Outcome.REENCRYPTED if written else Outcome.CHANGED
