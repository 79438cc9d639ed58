from __future__ import annotations

import secrets
from datetime import date

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.billing import billing_period, us_date
from accounts.keys import api_key_digest, generate_api_key
from accounts.models import Account, ApiKey, ProviderKey, SigningSecret, UsagePeriod
from core.crypto import encrypt
from core.errors import QuotaExceeded


@transaction.atomic
def account_create(*, email: str, plan: str, password: str | None = None) -> tuple[Account, str]:
    """A user, their account and a first API key; returns the key's plaintext (shown once)."""
    user = get_user_model().objects.create_user(username=email, email=email, password=password)
    account = Account.objects.create(user=user, plan=plan)
    return account, api_key_issue(account=account)


@transaction.atomic
def api_key_issue(*, account: Account) -> str:
    """Revokes the account's active key, if any, and issues a new one."""
    ApiKey.objects.filter(account=account, revoked_at__isnull=True).update(revoked_at=timezone.now())
    raw_key = generate_api_key()
    ApiKey.objects.create(account=account, digest=api_key_digest(raw_key), hint=raw_key[:10])
    return raw_key


def account_set_plan(*, account: Account, plan: str) -> Account:
    """Moves the account to ``plan``; a new plan starts a new billing cycle today."""
    account.plan = plan
    account.plan_started_on = timezone.now().date()
    account.save(update_fields=["plan", "plan_started_on"])
    return account


def current_period(account: Account) -> tuple[date, date]:
    """The account's billing cycle today: its first day and the day its quota resets."""
    return billing_period(anchor=account.plan_started_on, today=timezone.now().date())


def _take_unit(*, account: Account, period_start: date) -> bool:
    """Takes one unit of the period's quota if any is left; False when the row is missing or full.

    The check and the increment are one conditional UPDATE, whose row lock serialises concurrent
    sends of one account until their transaction ends.
    """
    period = UsagePeriod.objects.filter(
        account=account, period_start=period_start, used__lt=account.limits.monthly_quota
    )
    return period.update(used=F("used") + 1) == 1


def usage_consume(*, account: Account) -> None:
    """Counts one notification against the monthly quota, or raises QuotaExceeded.

    Call inside the transaction that creates the job, so a rejected job spends nothing.
    """
    start, resets_on = current_period(account)
    if _take_unit(account=account, period_start=start):
        return
    UsagePeriod.objects.get_or_create(account=account, period_start=start)
    if _take_unit(account=account, period_start=start):
        return
    used = UsagePeriod.objects.get(account=account, period_start=start).used
    limit = account.limits.monthly_quota
    raise QuotaExceeded(
        f"Monthly usage limit exceeded ({used}/{limit}). Upgrade your plan or wait for reset on {us_date(resets_on)}."
    )


def signing_secret_generate(*, account: Account) -> str:
    """Creates the account's signing secret, replacing any other; returns the plaintext (shown once)."""
    secret = "whsec_" + secrets.token_hex(32)
    SigningSecret.objects.update_or_create(account=account, defaults={"encrypted_secret": encrypt(secret)})
    return secret


def signing_secret_delete(*, account: Account) -> bool:
    deleted, _ = SigningSecret.objects.filter(account=account).delete()
    return deleted > 0


@transaction.atomic
def provider_key_set(
    *, account: Account, provider: str, api_key: str, priority: int | None = None, account_token: str | None = None
) -> ProviderKey:
    """Adds the provider's key to the account, or replaces it; a new key goes last unless told."""
    existing = ProviderKey.objects.filter(account=account, provider=provider).first()
    if priority is None:
        priority = existing.priority if existing else _next_priority(account)
    else:
        # Taking a place moves the keys at and after it one down, so the order stays strict.
        others = ProviderKey.objects.filter(account=account, priority__gte=priority).exclude(provider=provider)
        others.update(priority=F("priority") + 1)
    token = encrypt(account_token) if account_token else (existing.encrypted_account_token if existing else "")
    key, _ = ProviderKey.objects.update_or_create(
        account=account,
        provider=provider,
        defaults={"encrypted_api_key": encrypt(api_key), "priority": priority, "encrypted_account_token": token},
    )
    return key


def _next_priority(account: Account) -> int:
    highest = account.provider_keys.order_by("-priority").values_list("priority", flat=True).first()
    return (highest or 0) + 1


def provider_key_remove(*, account: Account, provider: str) -> bool:
    deleted, _ = ProviderKey.objects.filter(account=account, provider=provider).delete()
    return deleted > 0
