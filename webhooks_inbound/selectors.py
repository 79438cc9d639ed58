from __future__ import annotations

import uuid

from django.db import connection
from django.urls import reverse

from accounts.models import Account
from core import sql
from core.public_url import public_url
from providers.names import ProviderName
from webhooks_inbound.models import TrackingCredentials

# The receivers' URL slugs, in the order the dashboard and `manage.py trackingsecret` list them.
RECEIVER_SLUGS = {ProviderName.POSTMARK: "postmark", ProviderName.SENDGRID: "sendgrid", ProviderName.RESEND: "resend"}


# Every provider event starts here, so the account and its credentials come in one plain
# statement: compiling the ORM's select_related cost more than running it (docs/departures.md).
# Off the framework's road: docs/departures.md, "raw-sql-receivers".
RECEIVING_ACCOUNT_SQL = f"""
    SELECT {sql.columns(Account, "a")}, {sql.columns(TrackingCredentials, "c")}
    FROM {sql.table(Account)} a
    LEFT JOIN {sql.table(TrackingCredentials)} c
        ON c.{sql.column(TrackingCredentials, "account")} = a.{sql.column(Account, "id")}
    WHERE a.{sql.column(Account, "public_id")} = %s AND a.{sql.column(Account, "deleted_at")} IS NULL
"""


def receiving_account(*, customer_id: str) -> tuple[Account, TrackingCredentials | None] | None:
    """The account a receiver URL names by its public id, and its credentials; a deleted account is none."""
    try:
        public_id = uuid.UUID(customer_id)
    except ValueError:
        return None
    with connection.cursor() as cursor:
        cursor.execute(RECEIVING_ACCOUNT_SQL, [sql.db_value(Account, "public_id", public_id)])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(Account._meta.concrete_fields)
    credentials = sql.from_row(TrackingCredentials, row[split:]) if row[split] is not None else None
    return sql.from_row(Account, row[:split]), credentials


def tracking_credentials_of(account: Account) -> TrackingCredentials | None:
    try:
        return account.tracking_credentials
    except TrackingCredentials.DoesNotExist:
        return None


def receiver_urls(*, account: Account) -> dict[str, str]:
    """Where each provider should send the account's events, as absolute URLs under PUBLIC_URL."""
    return {
        provider: public_url(reverse(f"{slug}-events", args=[account.public_id]))
        for provider, slug in RECEIVER_SLUGS.items()
    }
