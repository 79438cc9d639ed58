from __future__ import annotations

import secrets
from datetime import date, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from accounts.billing import us_date
from accounts.keys import api_key_digest, generate_api_key
from accounts.models import (
    API_KEY_NAME_MAX_LENGTH,
    DEFAULT_KEY_NAME,
    MAX_ACTIVE_API_KEYS,
    MAX_RATE_LIMIT,
    Account,
    ApiKey,
    AuditAction,
    AuditEntry,
    KeyMode,
    KeyScope,
    ProviderKey,
    SigningSecret,
    UsagePeriod,
)
from accounts.plans import Plan
from accounts.selectors import active_api_keys, current_period
from core.actor import current_actor
from core.crypto import encrypt
from core.errors import (
    AccountNotDeleted,
    ApiKeyLimit,
    ApiKeyNameInvalid,
    ApiKeyNameTaken,
    ApiKeyNotFound,
    EmailTaken,
    EmailUnconfirmed,
    EmailUnconfirmedForKey,
    MonthlyLimitInvalid,
    ProviderCredentialRefused,
    ProviderKeyNotFound,
    ProviderKeysNeedPaidPlan,
    ProviderKeyUnchecked,
    ProviderUnreachable,
    QuotaExceeded,
    RateLimitInvalid,
)
from providers.base import CredentialRefused, Credentials, ProviderError
from providers.names import ProviderName
from providers.registry import get_provider

UNCONFIRMED_KEY_MESSAGE = EmailUnconfirmedForKey.message


@transaction.atomic
def account_create(*, email: str, plan: str, password: str | None = None) -> tuple[Account, str]:
    """An operator's account: a user, their confirmed account and a first API key (its plaintext, shown once)."""
    user = get_user_model().objects.create_user(username=email, email=email, password=password)
    account = Account.objects.create(user=user, plan=plan, email_confirmed_at=timezone.now())
    return account, api_key_issue(account=account)


@transaction.atomic
def account_sign_up(*, email: str, password: str) -> Account:
    """A holder's own Free account, unconfirmed and without a key until the address is confirmed.

    An address that is taken but still unconfirmed proves nothing about whoever took it: anyone may have typed
    it. So a sign-up for it starts over, and the earlier user goes with its password, sessions and whatever it
    set (docs/dashboard.md, "Signing up and confirming the email address").
    """
    users = get_user_model().objects
    taken = users.select_for_update(of=("self",)).filter(username__iexact=email).select_related("account").first()
    if taken is not None:
        if getattr(taken, "account", None) is None or taken.account.is_confirmed:
            raise EmailTaken()
        taken.delete()
    try:
        user = users.create_user(username=email, email=email, password=password)
    except IntegrityError:  # the same address signed up a moment ago
        raise EmailTaken() from None
    return Account.objects.create(user=user, plan=Plan.FREE)


def email_confirm(*, account: Account) -> Account:
    if account.email_confirmed_at is None:
        account.email_confirmed_at = timezone.now()
        account.save(update_fields=["email_confirmed_at"])
    return account


def confirmed_account_required(account: Account, *, refusal: type[EmailUnconfirmed] = EmailUnconfirmed) -> None:
    """Refuses anything that would outlive a sign-up started over (keys, secrets, credentials, a domain) until the
    holder has shown they read the address's mail: an unconfirmed account may be someone else's squat."""
    if not account.is_confirmed:
        raise refusal()


def audit_record(*, account: Account, action: AuditAction, target: str = "") -> AuditEntry:
    """Records one change to the account, made by whoever is acting now (core/actor.py) and with which API key, in
    the caller's transaction: a change rolled back leaves no entry. ``target`` names what changed, never a secret
    (docs/rules.md, "Audit log")."""
    actor = current_actor()
    return AuditEntry.objects.create(
        account=account, action=action, actor=actor.name, target=target, ip=actor.ip, api_key_id=actor.api_key_id
    )


@transaction.atomic
def api_key_issue(*, account: Account) -> str:
    """Replaces the account's first key (its oldest active one) with a new key of the same name, scope and mode, or
    makes its first key: the one key that `createaccount`, `rotateapikey` and the dashboard's first key deal with.
    The plaintext is returned, shown once."""
    confirmed_account_required(account, refusal=EmailUnconfirmedForKey)
    first = active_api_keys(account=account).select_for_update().first()
    if first is None:
        return _api_key_add(account, name=DEFAULT_KEY_NAME, scope=KeyScope.FULL, mode=KeyMode.LIVE)
    first.revoked_at = timezone.now()
    first.save(update_fields=["revoked_at"])
    audit_record(account=account, action=AuditAction.API_KEY_REVOKED, target=first.name)
    return _api_key_add(account, name=first.name, scope=first.scope, mode=first.mode)


@transaction.atomic
def api_key_create(*, account: Account, name: str, scope: str = KeyScope.FULL, mode: str = KeyMode.LIVE) -> str:
    """Issues one more key, named ``name`` with ``scope`` and ``mode``, of at most MAX_ACTIVE_API_KEYS; the
    plaintext, shown once (docs/rules.md, "API keys and scopes")."""
    confirmed_account_required(account, refusal=EmailUnconfirmedForKey)
    name = name.strip()
    if not 1 <= len(name) <= API_KEY_NAME_MAX_LENGTH or not name.isprintable():
        raise ApiKeyNameInvalid()
    # The account's row, locked, makes two creations count one after the other.
    Account.objects.select_for_update().filter(pk=account.pk).exists()
    active = active_api_keys(account=account)
    if active.count() >= MAX_ACTIVE_API_KEYS:
        raise ApiKeyLimit()
    if active.filter(name=name).exists():
        raise ApiKeyNameTaken(name=name)
    return _api_key_add(account, name=name, scope=scope, mode=mode)


@transaction.atomic
def api_key_revoke(*, account: Account, name: str) -> None:
    """Revokes the account's active key named ``name``: the next request with it is 401."""
    if not active_api_keys(account=account).filter(name=name).update(revoked_at=timezone.now()):
        raise ApiKeyNotFound(name=name)
    audit_record(account=account, action=AuditAction.API_KEY_REVOKED, target=name)


# How stale a key's last use may be shown: a request writes it only when the one recorded is older.
LAST_USED_EVERY = timedelta(minutes=1)


def api_key_used(api_key: ApiKey) -> None:
    """Records that a request used the key, at most once a minute a key: the time read with the key says whether the
    minute's use is recorded already, so nearly every request writes nothing."""
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at >= LAST_USED_EVERY:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)


def _api_key_add(account: Account, *, name: str, scope: str, mode: str) -> str:
    raw_key = generate_api_key()
    digest = api_key_digest(raw_key)
    ApiKey.objects.create(account=account, digest=digest, hint=raw_key[:10], name=name, scope=scope, mode=mode)
    audit_record(account=account, action=AuditAction.API_KEY_CREATED, target=name)
    return raw_key


@transaction.atomic
def account_delete(*, account: Account) -> None:
    """Soft delete: the holder cannot sign in and the API key answers 403; staff can restore it."""
    account.deleted_at = timezone.now()
    account.save(update_fields=["deleted_at"])
    account.user.is_active = False
    account.user.save(update_fields=["is_active"])
    audit_record(account=account, action=AuditAction.ACCOUNT_DELETED)


@transaction.atomic
def account_restore(*, account: Account) -> Account:
    """Undoes a soft delete: the holder signs in again and the same API key works, as nothing was revoked."""
    if account.deleted_at is None and account.user.is_active:
        raise AccountNotDeleted()
    account.deleted_at = None
    account.save(update_fields=["deleted_at"])
    account.user.is_active = True
    account.user.save(update_fields=["is_active"])
    audit_record(account=account, action=AuditAction.ACCOUNT_RESTORED)
    return account


@transaction.atomic
def account_set_plan(*, account: Account, plan: str) -> Account:
    """Moves the account to ``plan``; a new plan starts a new billing cycle today."""
    account.plan = plan
    account.plan_started_on = timezone.now().date()
    account.save(update_fields=["plan", "plan_started_on"])
    audit_record(account=account, action=AuditAction.PLAN_CHANGED, target=plan)
    return account


@transaction.atomic
def account_set_product_name(*, account: Account, product_name: str) -> Account:
    """Names the holder's product on the consumer portal's pages (blank: none); the same name records nothing."""
    if product_name != account.product_name:
        account.product_name = product_name
        account.save(update_fields=["product_name"])
        audit_record(account=account, action=AuditAction.PRODUCT_NAME_CHANGED, target=product_name)
    return account


MONTHLY_LIMIT_MESSAGE = MonthlyLimitInvalid.message
# An audit entry's target when staff give an account back its plan's quota.
PLAN_QUOTA = "plan's quota"


@transaction.atomic
def account_set_monthly_limit(*, account: Account, limit: int | None) -> Account:
    """Gives the account its own monthly limit in place of its plan's quota; None goes back to the plan's.

    It applies to the current billing cycle at once: what was used stays counted.
    """
    if limit is not None and limit < 1:
        raise MonthlyLimitInvalid()
    account.monthly_limit = limit
    account.save(update_fields=["monthly_limit"])
    audit_record(account=account, action=AuditAction.LIMIT_CHANGED, target=PLAN_QUOTA if limit is None else str(limit))
    return account


# An audit entry's target when staff give an account back its plan's rate limit.
PLAN_RATE = "plan's rate"


def rate_limit_described(rate: int) -> str:
    """A rate limit as the audit log and the commands say it, so it never reads as a monthly limit."""
    return f"{rate:,} requests a minute"


@transaction.atomic
def account_set_rate_limit(*, account: Account, rate: int | None) -> Account:
    """Gives each of the account's keys ``rate`` requests a minute in place of its plan's rate limit; None goes back
    to the plan's. The next request of each key is counted against it (docs/rules.md, "Limits")."""
    if rate is not None and not 1 <= rate <= MAX_RATE_LIMIT:
        raise RateLimitInvalid()
    account.rate_limit = rate
    account.save(update_fields=["rate_limit"])
    target = PLAN_RATE if rate is None else rate_limit_described(rate)
    audit_record(account=account, action=AuditAction.LIMIT_CHANGED, target=target)
    return account


def _take_units(*, account: Account, period_start: date, units: int) -> bool:
    """Takes ``units`` of the period's quota if that many are left; False when the row is missing or too full.

    The check and the increment are one conditional UPDATE, whose row lock serialises concurrent
    sends of one account until their transaction ends.
    """
    period = UsagePeriod.objects.filter(
        account=account, period_start=period_start, used__lte=account.limits.monthly_quota - units
    )
    return period.update(used=F("used") + units) == 1


def usage_consume(*, account: Account, units: int = 1) -> None:
    """Counts ``units`` notifications (a send, or a batch's) against the monthly quota, all or none, or raises
    QuotaExceeded.

    Call inside the transaction that creates the jobs, so a rejected send spends nothing.
    """
    start, resets_on = current_period(account)
    if _take_units(account=account, period_start=start, units=units):
        return
    UsagePeriod.objects.get_or_create(account=account, period_start=start)
    if _take_units(account=account, period_start=start, units=units):
        return
    used = UsagePeriod.objects.get(account=account, period_start=start).used
    raise QuotaExceeded(used=used, limit=account.limits.monthly_quota, resets_on=us_date(resets_on))


@transaction.atomic
def usage_reset(*, account: Account) -> int:
    """Puts the current billing cycle's usage back to 0; returns what it was.

    The row is locked while it is read and cleared, so a send in between is either counted before the reset
    (and returned) or after it.
    """
    start, _ = current_period(account)
    period = UsagePeriod.objects.select_for_update().filter(account=account, period_start=start)
    used = period.values_list("used", flat=True).first()
    if used:
        period.update(used=0)
    return used or 0


def signing_secret_generate(*, account: Account) -> str:
    """Creates the account's signing secret; returns the plaintext (shown once).

    A secret it replaces keeps signing beside it for SIGNING_SECRET_OVERLAP_SECONDS, so deliveries verify at
    receivers still holding the old one while they are given the new one.
    """
    confirmed_account_required(account)
    secret = "whsec_" + secrets.token_hex(32)
    with transaction.atomic():
        current = SigningSecret.objects.select_for_update().filter(account=account).first()
        overlap = timedelta(seconds=settings.SIGNING_SECRET_OVERLAP_SECONDS)
        previous = current.encrypted_secret if current and overlap else ""
        SigningSecret.objects.update_or_create(
            account=account,
            defaults={
                "encrypted_secret": encrypt(secret),
                "previous_encrypted_secret": previous,
                "previous_signs_until": timezone.now() + overlap if previous else None,
            },
        )
        action = AuditAction.SIGNING_SECRET_ROTATED if current else AuditAction.SIGNING_SECRET_GENERATED
        audit_record(account=account, action=action)
    return secret


@transaction.atomic
def signing_secret_delete(*, account: Account) -> bool:
    deleted, _ = SigningSecret.objects.filter(account=account).delete()
    if deleted:
        audit_record(account=account, action=AuditAction.SIGNING_SECRET_DELETED)
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
    audit_record(account=account, action=AuditAction.PROVIDER_KEY_ADDED, target=provider)
    return key


def _next_priority(account: Account) -> int:
    highest = account.provider_keys.order_by("-priority").values_list("priority", flat=True).first()
    return (highest or 0) + 1


@transaction.atomic
def provider_key_remove(*, account: Account, provider: str) -> bool:
    deleted, _ = ProviderKey.objects.filter(account=account, provider=provider).delete()
    if deleted:
        audit_record(account=account, action=AuditAction.PROVIDER_KEY_REMOVED, target=provider)
    return deleted > 0


# --- Provider keys from the dashboard -----------------------------------------------------------

CREDENTIAL_NAMES = {"api_key": "API key", "account_token": "account token"}


def provider_key_add(*, account: Account, provider: str, api_key: str, account_token: str = "") -> ProviderKey:
    """Saves a key the provider has just accepted, replacing the provider's key if there is one.

    Nothing is saved when the provider refuses a credential (InvalidRequest) or cannot be asked (UpstreamFailed).
    """
    if not account.limits.is_paid:
        raise ProviderKeysNeedPaidPlan()
    confirmed_account_required(account)
    token = account_token or None
    _check_with_provider(provider, Credentials(api_key=api_key, account_token=token))
    return provider_key_set(account=account, provider=provider, api_key=api_key, account_token=token)


def _check_with_provider(provider: str, credentials: Credentials) -> None:
    label = ProviderName(provider).label
    try:
        get_provider(provider).check_key(credentials)
    except CredentialRefused as refusal:
        credential = CREDENTIAL_NAMES[refusal.credential]
        raise ProviderCredentialRefused(provider=label, credential=credential, reason=refusal.message) from None
    except ProviderError as error:
        if error.status is None:
            raise ProviderUnreachable(provider=label, reason=error.message) from None
        raise ProviderKeyUnchecked(provider=label, reason=error.message, transient=error.transient) from None


@transaction.atomic
def provider_key_move(*, account: Account, provider: str, offset: int) -> None:
    """Moves the provider ``offset`` places in the order keys are tried (-1: earlier), renumbering them 1..n.

    The account's keys are locked first (in one order, by id), so concurrent moves wait for each other and each
    reorders what the last one left.
    """
    if not account.limits.is_paid:
        raise ProviderKeysNeedPaidPlan()
    locked = ProviderKey.objects.select_for_update().filter(account=account).order_by("pk")
    keys = sorted(locked, key=lambda key: (key.priority, key.created_at))
    names = [key.provider for key in keys]
    if provider not in names:
        raise ProviderKeyNotFound(provider=ProviderName(provider).label)
    place = names.index(provider)
    target = min(max(place + offset, 0), len(keys) - 1)
    keys.insert(target, keys.pop(place))
    for priority, key in enumerate(keys, start=1):
        if key.priority != priority:
            key.priority = priority
            key.save(update_fields=["priority"])
    if target != place:  # a key at the end it moves past stays where it is: nothing to record
        audit_record(account=account, action=AuditAction.PROVIDER_KEY_REORDERED, target=provider)
