"""A webhook job's secret custom headers: which they are, and how their values are kept (docs/rules.md, "Webhooks").

A custom header is secret when its name says it carries a credential (`is_secret_header`). Its value is stored
encrypted in ``Job.secret_headers``, apart from the payload, which keeps the name with ``***`` for a value: the
payload is what staff, database dumps and backups see. The delivery and the owner's own API put the value back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from core.crypto import decrypt, encrypt
from notifications.delivery.http import MASK

# A header whose name contains one of these, in any case, is secret: Authorization, Proxy-Authorization, Cookie,
# X-Api-Key, X-Auth-Token, X-Client-Secret, X-Hub-Signature... A harmless header it catches is still sent as given,
# only hidden from staff.
SECRET_NAME_PARTS = ("auth", "cookie", "credential", "key", "password", "secret", "session", "signature", "token")


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in SECRET_NAME_PARTS)


def split_secret_headers(headers: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The headers to store, each secret one's value masked, and the secret values encrypted; None when there are
    none, and nothing is encrypted then."""
    secrets = {name: value for name, value in headers.items() if is_secret_header(name)}
    if not secrets:
        return dict(headers), None
    return {**headers, **dict.fromkeys(secrets, MASK)}, encrypt(json.dumps(secrets))


def with_secret_headers(stored: Mapping[str, str], encrypted: str | None) -> dict[str, str]:
    """The headers as the client sent them: ``stored`` with the encrypted values back in place, in the same order.

    A job stored before secret headers were kept apart has its values in ``stored`` and nothing encrypted.
    """
    if encrypted is None:
        return dict(stored)
    return {**stored, **json.loads(decrypt(encrypted))}


def mask_secret_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with every secret one's value masked, whether or not it was stored apart."""
    return {name: MASK if is_secret_header(name) else value for name, value in headers.items()}
