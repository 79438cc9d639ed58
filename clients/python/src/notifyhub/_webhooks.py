"""Checking that a delivery came from NotifyHub: its webhooks and its event endpoints' events carry two signatures
of the same bytes (NotifyHub's docs/delivery-engine.md, "Webhooks"):

- NotifyHub's own, ``X-Webhook-Signature: t=<timestamp>,v1=<hex>``: HMAC-SHA256 of ``<timestamp>.<body>`` keyed
  with the secret as it is written (``whsec_...``), the format Stripe's libraries check;
- Standard Webhooks' (https://www.standardwebhooks.com/), ``webhook-id``, ``webhook-timestamp`` and
  ``webhook-signature: v1,<base64>``: the id signed too, checked here with the ``standardwebhooks`` library.

During a secret's rotation each header carries a signature per secret; one that matches is enough.

Only the Standard Webhooks signature covers the delivery's id: ``X-Webhook-Id`` is not signed by NotifyHub's own, so
a delivery checked by that one alone has no id to trust (a proxy that strips the ``webhook-*`` headers leaves a
forged ``X-Webhook-Id`` undetectable).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from standardwebhooks.webhooks import Webhook

from ._decode import decode
from ._errors import WebhookVerificationError
from ._models import Event

DEFAULT_TOLERANCE_SECONDS = 300


@dataclass(frozen=True, kw_only=True)
class VerifiedDelivery:
    """A delivery whose signature was checked: its JSON body, and its id only when a signature covers the id.

    ``id`` is ``webhook-id`` when the Standard Webhooks signature was checked; ``None`` when only NotifyHub's
    ``X-Webhook-Signature`` was there, which does not sign the id: ``X-Webhook-Id`` may then have been changed on the
    way, and deduplicating on it would let a forged id through, or drop a genuine delivery."""

    payload: dict[str, Any]
    id: str | None
    scheme: Literal["standard-webhooks", "notifyhub"]


def verify_delivery(
    secret: str, headers: Mapping[str, str], body: bytes | str, tolerance: int = DEFAULT_TOLERANCE_SECONDS
) -> VerifiedDelivery:
    """The delivery, once its signature is checked: made with ``secret`` over these very bytes, at most
    ``tolerance`` seconds ago (a replay is older). Pass the raw body, before any JSON parsing. The Standard Webhooks
    signature is checked when the headers carry it, and it signs the id too; NotifyHub's own otherwise, which leaves
    ``id`` None. Raises ``WebhookVerificationError``."""
    named = {name.lower(): value for name, value in headers.items()}
    raw = body.encode() if isinstance(body, str) else body
    if "webhook-signature" in named:
        signed_id = _check_standard(secret, named, raw, tolerance)
        return VerifiedDelivery(payload=_json_object(raw), id=signed_id, scheme="standard-webhooks")
    if "x-webhook-signature" in named:
        _check_notifyhub(secret, named["x-webhook-signature"], raw, tolerance)
        return VerifiedDelivery(payload=_json_object(raw), id=None, scheme="notifyhub")
    raise WebhookVerificationError("The delivery carries no signature: was a signing secret set?")


def verify_webhook(
    secret: str, headers: Mapping[str, str], body: bytes | str, tolerance: int = DEFAULT_TOLERANCE_SECONDS
) -> dict[str, Any]:
    """The delivery's JSON body, verified as ``verify_delivery`` does. For the id to deduplicate on, call that one:
    ``X-Webhook-Id`` as it arrived is signed only when ``webhook-id`` came with it."""
    return verify_delivery(secret, headers, body, tolerance).payload


def parse_event(
    secret: str, headers: Mapping[str, str], body: bytes | str, tolerance: int = DEFAULT_TOLERANCE_SECONDS
) -> Event:
    """An event endpoint's delivery, verified as ``verify_webhook`` does, as an ``Event``. The event's ``id`` is in the
    body, which both schemes sign: the id to deduplicate on, whichever signature was checked."""
    return decode(Event, verify_webhook(secret, headers, body, tolerance))


def _check_standard(secret: str, headers: Mapping[str, str], body: bytes, tolerance: int) -> str:
    """The id the signature covers, once it is checked."""
    message_id, timestamp = headers.get("webhook-id", ""), _timestamp(headers.get("webhook-timestamp", ""))
    _check_fresh(timestamp, tolerance)
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise WebhookVerificationError("The body is not UTF-8: NotifyHub sends JSON") from None
    try:
        signer = Webhook(secret)
    except ValueError:  # binascii.Error: the part after whsec_ is not base64
        raise WebhookVerificationError("The secret is not a signing secret: whsec_ and base64") from None
    signed_at = datetime.fromtimestamp(timestamp, tz=UTC)
    expected = signer.sign(msg_id=message_id, timestamp=signed_at, data=text)
    _check_any(expected, headers["webhook-signature"].split(" "))
    return message_id


def _check_notifyhub(secret: str, header: str, body: bytes, tolerance: int) -> None:
    parts = [part.strip().partition("=") for part in header.split(",")]
    timestamp = _timestamp(next((value for key, _, value in parts if key == "t"), ""))
    _check_fresh(timestamp, tolerance)
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    _check_any(expected, [value for key, _, value in parts if key == "v1"])


def _timestamp(value: str) -> int:
    if not value.isdigit():
        raise WebhookVerificationError("The signature's timestamp is missing or malformed")
    return int(value)


def _check_fresh(timestamp: int, tolerance: int) -> None:
    if abs(time.time() - timestamp) > tolerance:
        raise WebhookVerificationError(f"The signature's timestamp is more than {tolerance} s from now: a replay?")


def _check_any(expected: str, candidates: list[str]) -> None:
    if not any(hmac.compare_digest(expected.encode(), candidate.encode()) for candidate in candidates):
        raise WebhookVerificationError("No signature matches: another secret, or the body was altered")


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise WebhookVerificationError("The body is not a JSON object")
    return parsed
