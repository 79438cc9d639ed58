"""The consumer portal's links and sessions (docs/customer-webhooks.md, "Consumer portal").

A link is ``<PUBLIC_URL>/portal/<token>/``. The token is the JSON ``[app id, account id, expiry]`` (the expiry in
Unix seconds), base64url, a ``.``, and its HMAC-SHA256 under a key derived from ``SECRET_KEY`` with a salt of its own
(``django.core.signing``): no part can be changed, another app named or the expiry moved, without the signature
failing. It holds its expiry rather than the time it was signed, so ``expiresAt`` is exactly when it stops working,
whatever ``PORTAL_LINK_SECONDS`` is set to meanwhile. Opening it gives the browser a session cookie of the same three
values signed under another salt (a cookie is not a link), which ends at the same time: the expiry in it is checked
on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core import signing
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account, AuditAction
from accounts.services import audit_record
from core.public_url import public_url
from customer_webhooks.models import App

# Apart from every other signature the project makes with SECRET_KEY: a link never reads as a session, nor either as
# anything else signed.
LINK_SALT = "notifyhub.customer_webhooks.portal-link"
SESSION_SALT = "notifyhub.customer_webhooks.portal-session"
# "." is not in base64url's alphabet, and unlike Django's default ":" needs no thought in a URL's path.
TOKEN_SEPARATOR = "."
# A token longer than any NotifyHub signs is refused unread.
TOKEN_MAX_LENGTH = 300


@dataclass(frozen=True)
class PortalGrant:
    """What a link or a session opens: one app of one account, until ``expires_at``."""

    app_id: UUID
    account_id: int
    expires_at: datetime

    @property
    def expired(self) -> bool:
        return timezone.now() >= self.expires_at

    def sign(self, salt: str) -> str:
        expiry = int(self.expires_at.timestamp())
        return _signer(salt).sign_object([self.app_id.hex, self.account_id, expiry])


@dataclass(frozen=True)
class PortalLink:
    url: str
    expires_at: datetime


def _signer(salt: str) -> signing.Signer:
    return signing.Signer(salt=salt, sep=TOKEN_SEPARATOR)


def portal_link_create(*, app: App) -> PortalLink:
    """A link to the app's portal, valid PORTAL_LINK_SECONDS from now, recorded in the account's audit log (the
    link itself never is: it is a bearer secret)."""
    expires_at = timezone.now().replace(microsecond=0) + timedelta(seconds=settings.PORTAL_LINK_SECONDS)
    grant = PortalGrant(app_id=app.id, account_id=app.account_id, expires_at=expires_at)
    audit_record(account=app.account, action=AuditAction.PORTAL_LINK_CREATED, target=app.uid or str(app.id))
    return PortalLink(url=public_url(reverse("portal-open", args=[grant.sign(LINK_SALT)])), expires_at=expires_at)


def portal_grant_read(token: str, *, salt: str = LINK_SALT) -> PortalGrant | None:
    """What ``token`` opens, expired or not, or None when NotifyHub did not sign it as it is (altered, made up, or of
    another kind)."""
    if len(token) > TOKEN_MAX_LENGTH:
        return None
    try:
        signed: Any = _signer(salt).unsign_object(token)
    except signing.BadSignature:
        return None
    match signed:
        case [str(app_id), int(account_id), int(expiry)]:
            return PortalGrant(
                app_id=UUID(hex=app_id), account_id=account_id, expires_at=datetime.fromtimestamp(expiry, tz=UTC)
            )
    return None


def portal_account(grant: PortalGrant) -> Account | None:
    """The account a grant is of, unless it is deleted since."""
    return Account.objects.filter(pk=grant.account_id, deleted_at__isnull=True).first()


def portal_app(grant: PortalGrant) -> App | None:
    """The app a grant opens, unless it or its account is deleted since."""
    return (
        App.objects.select_related("account")
        .filter(id=grant.app_id, account_id=grant.account_id, account__deleted_at__isnull=True)
        .first()
    )
