"""Webhook signatures, two schemes over the same bytes (docs/delivery-engine.md).

NotifyHub's own: ``X-Webhook-Signature: t=<timestamp>,v1=<hex>``, where ``<hex>`` is HMAC-SHA256, keyed with the
plaintext secret, of ``<timestamp>.<body>``: the exact bytes NotifyHub sent. Receivers can use
:func:`verify_signature` as it is; it depends on nothing but the standard library.

Standard Webhooks' (https://www.standardwebhooks.com/): ``webhook-signature: v1,<base64>``, HMAC-SHA256 of
``<id>.<timestamp>.<body>`` keyed with the base64-decoded part of the secret after ``whsec_``, so the id cannot be
swapped either; the Standard Webhooks libraries verify it in every language.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

DEFAULT_TOLERANCE_SECONDS = 300


def compute_signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes, *older: str) -> str:
    """``t=<timestamp>,v1=<hex>`` with ``secret``, then one more ``v1`` for each of ``older``: secrets a rotation
    replaced that still sign, newest first."""
    signatures = (f"v1={compute_signature(key, timestamp, body)}" for key in (secret, *older))
    return ",".join([f"t={timestamp}", *signatures])


def standard_signature_header(secret: str, message_id: str, timestamp: int, body: bytes, *older: str) -> str:
    """The ``webhook-signature`` header's value, ``v1,<base64>`` (the Standard Webhooks specification), with
    ``secret``, then one more, space-separated, for each of ``older``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return " ".join(f"v1,{_standard_signature(key, signed)}" for key in (secret, *older))


def _standard_signature(secret: str, signed: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def _parse_header(header: str) -> tuple[int | None, list[str]]:
    timestamp, signatures = None, []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1":
            signatures.append(value)
    return timestamp, signatures


def verify_signature(
    secret: str,
    header: str,
    body: bytes,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    *,
    now: float | None = None,
) -> bool:
    """True when ``header`` signs ``body`` with ``secret`` and is at most ``tolerance`` seconds old.

    Pass the raw request body, before any JSON parsing: re-serialising changes the bytes.
    The comparison is constant-time; the tolerance rejects replays of old deliveries.
    """
    timestamp, signatures = _parse_header(header)
    if timestamp is None or not signatures:
        return False
    current = time.time() if now is None else now
    if tolerance and abs(current - timestamp) > tolerance:
        return False
    expected = compute_signature(secret, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures)
