from __future__ import annotations

from accounts.models import Account
from domains.models import SENDING_SUBDOMAIN, DomainStatus, SenderDomain
from notifyhub.api.errors import ApiError

NO_DOMAIN_MESSAGE = "Paid plans must use a verified sending domain. Add and verify your domain first."


def domain_get(*, account: Account) -> SenderDomain | None:
    return SenderDomain.objects.prefetch_related("registrations").filter(account=account).first()


def domain_require(*, account: Account) -> SenderDomain:
    """The account's domain; a 404 in the envelope when it has none."""
    domain = domain_get(account=account)
    if domain is None:
        raise ApiError(404, "No sender domain. Request one first.")
    return domain


def sender_for(*, account: Account, requested: str | None) -> str:
    """The address a paid account's email goes out from (spec section 4, sender rules 2-5)."""
    domain = SenderDomain.objects.filter(account=account).first()
    if domain is None:
        raise ApiError(403, NO_DOMAIN_MESSAGE)
    if domain.status != DomainStatus.VERIFIED:
        raise ApiError(403, f"Your sending domain {domain.name} is pending verification. Verify it before sending.")
    if requested is None:
        return f"noreply@{domain.sending_name}"
    local, _, host = requested.rpartition("@")
    if host.lower() == domain.name:
        return f"{local}@{SENDING_SUBDOMAIN}.{domain.name}"
    if host.lower() == domain.sending_name:
        return requested
    raise ApiError(400, f"Cannot send from {requested}. Use your verified domain {domain.name} instead.")
