from __future__ import annotations

from django.conf import settings

from accounts.models import Account
from core.errors import DomainNotFound
from domains.models import DomainStatus, SenderDomain


def domain_get(*, account: Account) -> SenderDomain | None:
    return SenderDomain.objects.prefetch_related("registrations").filter(account=account).first()


def domain_require(*, account: Account) -> SenderDomain:
    """The account's domain, or DomainNotFound when it has none."""
    domain = domain_get(account=account)
    if domain is None:
        raise DomainNotFound()
    return domain


def sending_domain_name(*, account_id: int) -> str | None:
    """The domain the account's email comes from, as its recipients know it: its sender domain once verified, else
    the platform's, whose ``noreply`` address the Free plan sends from (docs/rules.md, "Senders"). None when there is
    no such account."""
    account = Account.objects.select_related("sender_domain").filter(pk=account_id).first()
    if account is None:
        return None
    domain: SenderDomain | None = getattr(account, "sender_domain", None)
    if domain is not None and domain.status == DomainStatus.VERIFIED:
        return domain.name
    return str(settings.PLATFORM_DOMAIN)
