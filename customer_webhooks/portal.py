"""The consumer portal's links and sessions (docs/customer-webhooks.md, "Consumer portal").

A link is ``<PUBLIC_URL>/portal/<token>/``. The token is the JSON ``[app id, account id, issued, expiry]`` (the time
it was made in Unix microseconds, the expiry in Unix seconds), base64url, a ``.``, and its HMAC-SHA256 under a key
derived from ``SECRET_KEY`` with a salt of its own (``django.core.signing``): no part can be changed, another app
named or the expiry moved, without the signature failing. It holds its expiry, so ``expiresAt`` is exactly when it
stops working whatever ``PORTAL_LINK_SECONDS`` is set to meanwhile, and the time it was made, which the app's
``portal_revoked_at`` is compared with: the holder's revoke ends every link made up to then. Opening it gives the
browser a session cookie of the same four values signed under another salt (a cookie is not a link), which ends when
the link does: the expiry and the revoke are checked on every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core import signing
from django.db import transaction
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
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class PortalGrant:
    """What a link or a session opens: one app of one account, from ``issued_at`` until ``expires_at`` or the app's
    links are revoked, whichever comes first."""

    app_id: UUID
    account_id: int
    issued_at: datetime
    expires_at: datetime

    @property
    def expired(self) -> bool:
        return timezone.now() >= self.expires_at

    def revoked(self, app: App) -> bool:
        """Whether the holder ended the app's links since this one was made (a link made in the same microsecond
        as the revoke is taken as made before it)."""
        return app.portal_revoked_at is not None and self.issued_at <= app.portal_revoked_at

    def sign(self, salt: str) -> str:
        issued = _microseconds(self.issued_at)
        expiry = int(self.expires_at.timestamp())
        return _signer(salt).sign_object([self.app_id.hex, self.account_id, issued, expiry])


@dataclass(frozen=True)
class PortalLink:
    url: str
    expires_at: datetime


def _signer(salt: str) -> signing.Signer:
    return signing.Signer(salt=salt, sep=TOKEN_SEPARATOR)


def _microseconds(moment: datetime) -> int:
    """Unix microseconds, exact: a float's seconds would round a microsecond away."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def portal_link_create(*, app: App) -> PortalLink:
    """A link to the app's portal, valid PORTAL_LINK_SECONDS from now, recorded in the account's audit log (the
    link itself never is: it is a bearer secret)."""
    issued_at = timezone.now()
    expires_at = issued_at.replace(microsecond=0) + timedelta(seconds=settings.PORTAL_LINK_SECONDS)
    grant = PortalGrant(app_id=app.id, account_id=app.account_id, issued_at=issued_at, expires_at=expires_at)
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
        case [str(app_id), int(account_id), int(issued), int(expiry)]:
            return PortalGrant(
                app_id=UUID(hex=app_id),
                account_id=account_id,
                issued_at=EPOCH + timedelta(microseconds=issued),
                expires_at=datetime.fromtimestamp(expiry, tz=UTC),
            )
    return None


@transaction.atomic
def portal_links_revoke(*, app: App) -> datetime:
    """Ends every link of the app made until now, and every session opened with one, before they expire; recorded
    in the account's audit log. Links made afterwards work. Returns the time they are ended at."""
    revoked_at = timezone.now()
    App.objects.filter(id=app.id).update(portal_revoked_at=revoked_at)
    app.portal_revoked_at = revoked_at
    audit_record(account=app.account, action=AuditAction.PORTAL_LINKS_REVOKED, target=app.uid or str(app.id))
    return revoked_at


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
