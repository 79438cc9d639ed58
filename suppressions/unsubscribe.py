"""One-click unsubscribe (RFC 8058, https://www.rfc-editor.org/rfc/rfc8058): the link an email sent with a topic
carries, and the token in it (docs/suppressions.md, "One-click unsubscribe").

The token is the JSON ``[account id, recipient, topic]``, base64url, a ``.``, and its HMAC-SHA256 under a key
derived from ``SECRET_KEY`` with a salt of its own (``django.core.signing``): it binds the three together, so no
part can be changed without the signature failing, and it never expires (it holds no time). A key in
``SECRET_KEY_FALLBACKS`` still reads the links signed before a rotation.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core import signing
from django.urls import reverse

from core.public_url import public_url
from suppressions.selectors import normalized_address

# Apart from every other signature the project makes with SECRET_KEY: no other signed value reads as a token here.
UNSUBSCRIBE_SALT = "notifyhub.suppressions.unsubscribe"
# "." is not in base64url's alphabet, and unlike Django's default ":" needs no thought in a URL's path.
TOKEN_SEPARATOR = "."
# A token longer than any NotifyHub signs (a 320-character address, a 64-character topic) is refused unread.
TOKEN_MAX_LENGTH = 600
# What a mail client posts to the URL (RFC 8058, section 3.1), a form's one field.
ONE_CLICK_FIELD, ONE_CLICK_VALUE = "List-Unsubscribe", "One-Click"
ONE_CLICK = f"{ONE_CLICK_FIELD}={ONE_CLICK_VALUE}"


@dataclass(frozen=True)
class Unsubscription:
    """Whom a token is for: the account's recipient (normalized, as the list stores it) and the topic."""

    account_id: int
    email: str
    topic: str


def _signer() -> signing.Signer:
    return signing.Signer(salt=UNSUBSCRIBE_SALT, sep=TOKEN_SEPARATOR)


def unsubscribe_token(*, account_id: int, email: str, topic: str) -> str:
    """The token of ``email``'s unsubscribe from the account's ``topic``: the same for every email to it."""
    return _signer().sign_object([account_id, normalized_address(email), topic])


def unsubscribe_url(*, account_id: int, email: str, topic: str) -> str:
    """The unsubscribe page of ``email`` for the account's ``topic``, under PUBLIC_URL: the URL of the email's
    ``List-Unsubscribe`` header, and what a template sent with the topic gives as ``unsubscribe_url``."""
    token = unsubscribe_token(account_id=account_id, email=email, topic=topic)
    return public_url(reverse("unsubscribe", args=[token]))


def unsubscribe_headers(*, account_id: int, email: str, topic: str) -> dict[str, str]:
    """The headers that offer one-click unsubscribe (RFC 8058, section 3.1): the HTTPS URL to POST to, and the
    key-value pair a mail client posts."""
    return {
        "List-Unsubscribe": f"<{unsubscribe_url(account_id=account_id, email=email, topic=topic)}>",
        "List-Unsubscribe-Post": ONE_CLICK,
    }


def unsubscription_read(token: str) -> Unsubscription | None:
    """Whom ``token`` is for, or None when NotifyHub did not sign it as it is (altered, made up, or of another
    kind)."""
    if len(token) > TOKEN_MAX_LENGTH:
        return None
    try:
        account_id, email, topic = _signer().unsign_object(token)
    except signing.BadSignature:
        return None
    return Unsubscription(account_id=account_id, email=email, topic=topic)
