from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from accounts.billing import billing_period
from accounts.keys import api_key_digest, is_well_formed
from accounts.models import Account, ApiKey, AuditEntry, ProviderKey, SigningSecret, UsagePeriod
from core import sql
from core.crypto import decrypt
from core.paging import page_rows
from providers.base import Credentials

# Every API request starts here, so the lookup is one plain statement: compiling the ORM
# query cost more than running it. Only the columns authentication, limits and quota read, and the
# templates' stamp a templated send checks its cached template against (email_templates.selectors).
# The key's account_id is the account's id, set when the account is assigned: read once, as a.id.
KEY_FIELDS = ("id", "scope", "mode", "last_used_at")
ACCOUNT_FIELDS = (
    "id",
    "user",
    "plan",
    "plan_started_on",
    "monthly_limit",
    "rate_limit",
    "is_active",
    "deleted_at",
    "templates_stamp",
)
# Off the framework's road: docs/departures.md, "raw-sql-key-lookup".
API_KEY_LOOKUP_SQL = f"""
    SELECT {sql.columns(ApiKey, "k", fields=KEY_FIELDS)}, {sql.columns(Account, "a", fields=ACCOUNT_FIELDS)}
    FROM {sql.table(ApiKey)} k
    JOIN {sql.table(Account)} a ON a.{sql.column(Account, "id")} = k.{sql.column(ApiKey, "account")}
    WHERE k.{sql.column(ApiKey, "digest")} = %s AND k.{sql.column(ApiKey, "revoked_at")} IS NULL
"""


def api_key_find(*, raw_key: str) -> ApiKey | None:
    """The active key matching ``raw_key``, with its account, in one query (nothing else is loaded)."""
    if not is_well_formed(raw_key):
        return None
    with connection.cursor() as cursor:
        cursor.execute(API_KEY_LOOKUP_SQL, [api_key_digest(raw_key)])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key = sql.from_row(ApiKey, row[: len(KEY_FIELDS)], fields=KEY_FIELDS)
    api_key.account = sql.from_row(Account, row[len(KEY_FIELDS) :], fields=ACCOUNT_FIELDS)
    return api_key


def account_get_by_email(*, email: str) -> Account | None:
    return Account.objects.select_related("user").filter(user__email__iexact=email).first()


def signing_secrets_decrypt(*encrypted: str | None) -> list[str]:
    """The plaintexts of the secrets that sign a delivery, newest first; an empty one is left out."""
    return [decrypt(secret) for secret in encrypted if secret]


def signing_secret_exists(*, account: Account) -> bool:
    return SigningSecret.objects.filter(account=account).exists()


def signing_secret_get(*, account_id: int) -> str | None:
    """The account's plaintext signing secret, the newest, or None when it has none."""
    return next(iter(signing_secrets_get(account_id=account_id)), None)


def signing_secrets_get(*, account_id: int) -> list[str]:
    """The secrets that sign the account's deliveries now, newest first: its secret and, for a while after a
    rotation, the one it replaced (accounts.services.signing_secret_generate)."""
    row = SigningSecret.objects.filter(account_id=account_id).first()
    if row is None:
        return []
    previous = row.previous_encrypted_secret if row.previous_still_signs else None
    return signing_secrets_decrypt(row.encrypted_secret, previous)


def previous_secret_signs_until(*, account: Account) -> datetime | None:
    """Until when the secret a rotation replaced still signs beside the new one; None when none does."""
    row = SigningSecret.objects.filter(account=account).only("previous_signs_until").first()
    return row.previous_signs_until if row is not None and row.previous_still_signs else None


def provider_credentials(*, account: Account) -> dict[str, Credentials]:
    """The account's providers in priority order, with their decrypted credentials."""
    return {
        key.provider: Credentials(
            api_key=decrypt(key.encrypted_api_key),
            account_token=decrypt(key.encrypted_account_token) if key.encrypted_account_token else None,
        )
        for key in ProviderKey.objects.filter(account=account).order_by("priority", "created_at")
    }


def configured_providers(*, account: Account) -> list[str]:
    """Names of the account's providers in priority order; nothing is decrypted."""
    return list(
        ProviderKey.objects.filter(account=account)
        .order_by("priority", "created_at")
        .values_list("provider", flat=True)
    )


@dataclass(frozen=True)
class Usage:
    plan: str
    used: int
    # Notifications the period allows (Free: all of them; paid plans: webhooks only).
    limit: int
    period_start: date
    resets_on: date


def current_period(account: Account) -> tuple[date, date]:
    """The account's billing cycle today: its first day and the day its quota resets."""
    return billing_period(anchor=account.plan_started_on, today=timezone.now().date())


def usage_get(*, account: Account) -> Usage:
    """This billing period's use of the quota."""
    start, resets_on = current_period(account)
    used = UsagePeriod.objects.filter(account=account, period_start=start).values_list("used", flat=True).first()
    return Usage(
        plan=account.plan,
        used=used or 0,
        limit=account.limits.monthly_quota,
        period_start=start,
        resets_on=resets_on,
    )


def active_api_keys(*, account: Account) -> QuerySet[ApiKey]:
    """The account's keys that authenticate, oldest first: the first is the one `api_key_issue` replaces."""
    return ApiKey.objects.filter(account=account, revoked_at__isnull=True).order_by("created_at", "id")


def active_api_key(*, account: Account) -> ApiKey | None:
    return active_api_keys(account=account).first()


def audit_list(*, account: Account, page: int, limit: int) -> tuple[list[AuditEntry], int]:
    """One page of the account's audit log, newest first, and how many entries it has (docs/rules.md, "Audit log")."""
    entries = AuditEntry.objects.filter(account=account).select_related("api_key").order_by("-created_at", "-id")
    return page_rows(entries, page=page, limit=limit)
