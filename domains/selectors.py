from __future__ import annotations

from accounts.models import Account
from core.errors import DomainNotFound
from domains.models import SenderDomain


def domain_get(*, account: Account) -> SenderDomain | None:
    return SenderDomain.objects.prefetch_related("registrations").filter(account=account).first()


def domain_require(*, account: Account) -> SenderDomain:
    """The account's domain, or DomainNotFound when it has none."""
    domain = domain_get(account=account)
    if domain is None:
        raise DomainNotFound()
    return domain
