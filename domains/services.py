"""Sender domains: register ``em.<domain>`` with every configured provider, verify, delete."""

from __future__ import annotations

import contextlib
import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Account, AuditAction
from accounts.selectors import provider_credentials
from accounts.services import audit_record, confirmed_account_required, provider_key_add
from core.errors import (
    DomainExists,
    DomainNeedsProviderKey,
    DomainRegistrationFailed,
    DomainsNeedPaidPlan,
    NoProviderCanRegister,
    SenderOutsideDomain,
    SendingDomainPending,
    SendingDomainRequired,
)
from domains.models import SENDING_SUBDOMAIN, DomainRegistration, DomainStatus, SenderDomain
from domains.selectors import domain_get, domain_require
from providers.base import Credentials, ProviderError
from providers.registry import get_provider

logger = logging.getLogger(__name__)


def sender_address(*, account: Account, requested: str | None) -> str:
    """The address a paid account's email goes out from (docs/rules.md, "Senders")."""
    domain = SenderDomain.objects.filter(account=account).first()
    if domain is None:
        raise SendingDomainRequired()
    if domain.status != DomainStatus.VERIFIED:
        raise SendingDomainPending()
    if requested is None:
        return f"noreply@{domain.sending_name}"
    local, _, host = requested.rpartition("@")
    if host.lower() == domain.name:
        return f"{local}@{SENDING_SUBDOMAIN}.{domain.name}"
    if host.lower() == domain.sending_name:
        return requested
    raise SenderOutsideDomain(sender=requested, domain=domain.name)


def _require_paid(account: Account) -> None:
    if not account.limits.is_paid:
        raise DomainsNeedPaidPlan()


def _participants(account: Account) -> tuple[dict[str, Credentials], list[dict[str, str]]]:
    """Providers that can manage domains with the account's credentials, and warnings for the rest."""
    usable, warnings = {}, []
    for name, credentials in provider_credentials(account=account).items():
        missing = get_provider(name).missing_domain_credentials(credentials)
        if missing:
            warnings.append({"provider": name, "reason": f"{missing}; skipped in domain verification"})
        else:
            usable[name] = credentials
    return usable, warnings


def _register(name: str, credentials: Credentials, sending_name: str) -> DomainRegistration:
    state = get_provider(name).domain_create(sending_name, credentials)
    return DomainRegistration(
        provider=name,
        provider_domain_id=state.provider_domain_id,
        records=[{"provider": name, **record.as_dict()} for record in state.records],
        verified=state.verified,
    )


def domain_request(*, account: Account, name: str) -> SenderDomain:
    """Registers the account's domain with every provider that can take part; all or nothing."""
    _require_paid(account)
    confirmed_account_required(account)
    existing = domain_get(account=account)
    if existing is not None:
        raise DomainExists(name=existing.name)
    if not provider_credentials(account=account):
        raise DomainNeedsProviderKey()
    participants, warnings = _participants(account)
    if not participants:
        raise NoProviderCanRegister(reasons=[warning["reason"] for warning in warnings])
    domain = SenderDomain(account=account, name=name, warnings=warnings)
    registrations = _register_all(participants, domain.sending_name)
    try:
        with transaction.atomic():
            domain.save()
            for registration in registrations:
                registration.domain = domain
            DomainRegistration.objects.bulk_create(registrations)
            audit_record(account=account, action=AuditAction.DOMAIN_REQUESTED, target=domain.name)
    except IntegrityError:
        # A concurrent request won; it uses the same provider registrations.
        raise DomainExists(name=None) from None
    return _refresh_status(domain)


def _register_all(participants: dict[str, Credentials], sending_name: str) -> list[DomainRegistration]:
    registrations: list[DomainRegistration] = []
    for provider, credentials in participants.items():
        try:
            registrations.append(_register(provider, credentials, sending_name))
        except ProviderError as error:
            _unregister(registrations, participants)
            raise DomainRegistrationFailed(sending_name=sending_name, error=str(error)) from None
    return registrations


def _unregister(registrations: list[DomainRegistration], credentials: dict[str, Credentials]) -> list[dict[str, str]]:
    """Removes the registrations at their providers; returns a warning for each that could not be removed."""
    warnings = []
    for registration in registrations:
        provider_key = credentials.get(registration.provider)
        try:
            if provider_key is None:
                raise ProviderError(registration.provider, "no key configured to remove it with", transient=False)
            get_provider(registration.provider).domain_delete(registration.provider_domain_id, provider_key)
        except ProviderError as error:
            logger.warning("Could not remove %s: %s", registration, error)
            warnings.append({"provider": registration.provider, "reason": error.message})
    return warnings


def domain_verify(*, account: Account) -> SenderDomain:
    """Asks every provider; verified only when all of them confirm."""
    domain = domain_require(account=account)
    participants, domain.warnings = _participants(account)
    registered = {registration.provider: registration for registration in domain.registrations.all()}
    for provider, credentials in participants.items():
        registration = registered.get(provider) or _register_late(domain, provider, credentials)
        if registration is not None:
            _verify_one(registration, credentials)
    for provider, registration in registered.items():
        if provider not in participants:
            registration.delete()  # the key is gone: the provider no longer takes part
    return _check_save(account, domain)


def _check_save(account: Account, domain: SenderDomain) -> SenderDomain:
    """Saves what a check found; the check that finds the domain verified first records so.

    The domain's row is locked first: of two checks at once that verify it, the second finds it verified already.
    """
    with transaction.atomic():
        locked = SenderDomain.objects.select_for_update().filter(pk=domain.pk)
        status_before = locked.values_list("status", flat=True).first()
        domain.save(update_fields=["warnings"])
        fresh = _refresh_status(domain)
        if fresh.status == DomainStatus.VERIFIED and status_before != DomainStatus.VERIFIED:
            audit_record(account=account, action=AuditAction.DOMAIN_VERIFIED, target=domain.name)
    return fresh


def _register_late(domain: SenderDomain, provider: str, credentials: Credentials) -> DomainRegistration | None:
    """A provider configured after the request is registered now, so it can confirm too."""
    try:
        registration = _register(provider, credentials, domain.sending_name)
    except ProviderError as error:
        domain.warnings = [*domain.warnings, {"provider": provider, "reason": f"could not register: {error.message}"}]
        return None
    registration.domain = domain
    registration.save()
    return registration


def _verify_one(registration: DomainRegistration, credentials: Credentials) -> None:
    try:
        result = get_provider(registration.provider).domain_verify(registration.provider_domain_id, credentials)
    except ProviderError as error:
        registration.verified, registration.last_error = False, error.message
    else:
        registration.verified = result.verified
        registration.last_error = "" if result.verified else "; ".join(result.reasons) or "not verified yet"
    registration.save(update_fields=["verified", "last_error"])


def _refresh_status(domain: SenderDomain) -> SenderDomain:
    registrations = DomainRegistration.objects.filter(domain=domain)
    verified = registrations.exists() and not registrations.filter(verified=False).exists()
    domain.status = DomainStatus.VERIFIED if verified else DomainStatus.PENDING
    domain.verified_at = (domain.verified_at or timezone.now()) if verified else None
    domain.save(update_fields=["status", "verified_at"])
    fresh = domain_get(account=domain.account)
    assert fresh is not None
    return fresh


def domain_delete(*, account: Account) -> list[dict[str, str]]:
    """Removes the domain at every provider, then here; returns warnings for providers that refused."""
    domain = domain_require(account=account)
    warnings = _unregister(list(domain.registrations.all()), provider_credentials(account=account))
    with transaction.atomic():
        domain.delete()
        audit_record(account=account, action=AuditAction.DOMAIN_DELETED, target=domain.name)
    return warnings


def provider_key_add_and_register(
    *, account: Account, provider: str, api_key: str, account_token: str = ""
) -> SenderDomain | None:
    """Saves a key the provider accepts (``accounts.services.provider_key_add``), then registers the account's
    sending domain with that provider; returns the domain, or None when the account has none.

    The provider takes part from now on, as ``domain_verify`` would make it: its DNS records show at once, and as
    the domain is verified only while every registered provider confirms it, the domain is pending until this one
    does. A replaced key may belong to another account at the provider, so any earlier registration gives way to a
    new one (a domain the provider already holds is fetched, not created again). A provider that cannot take part
    is named in the domain's warnings.
    """
    provider_key_add(account=account, provider=provider, api_key=api_key, account_token=account_token)
    domain = domain_get(account=account)
    if domain is None:
        return None
    participants, skipped = _participants(account)
    domain.warnings = [w for w in domain.warnings if w["provider"] != provider]
    domain.warnings += [w for w in skipped if w["provider"] == provider]
    DomainRegistration.objects.filter(domain=domain, provider=provider).delete()
    if provider in participants:
        # IntegrityError: a concurrent request for the same key registered it first.
        with contextlib.suppress(IntegrityError):
            _register_late(domain, provider, participants[provider])
    domain.save(update_fields=["warnings"])
    return _refresh_status(domain)
