"""The providers' credentials in the form their verifiers take, built once per credential."""

from __future__ import annotations

import binascii
import time
from functools import lru_cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from standardwebhooks.webhooks import EmptyWebhookSecretError
from svix.webhooks import Webhook as SvixWebhook

# Signed events older (or newer) than this are refused: a captured request cannot be replayed later.
SIGNATURE_TOLERANCE_SECONDS = 5 * 60


@lru_cache(maxsize=1024)
def sendgrid_public_key(verification_key: str) -> ec.EllipticCurvePublicKey | None:
    """SendGrid's verification key (base64 DER, as its settings page shows it), or None when it is not a P-256 key."""
    pem = f"-----BEGIN PUBLIC KEY-----\n{verification_key}\n-----END PUBLIC KEY-----".encode()
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError):
        return None
    return key if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1) else None


@lru_cache(maxsize=1024)
def resend_verifier(signing_secret: str) -> SvixWebhook | None:
    """A Svix verifier for Resend's signing secret (``whsec_`` then base64), or None when it is not one."""
    if not signing_secret.startswith("whsec_"):
        return None
    try:
        return SvixWebhook(signing_secret)
    except (binascii.Error, ValueError, EmptyWebhookSecretError):
        return None


def is_fresh(unix_timestamp: str | None, *, now: float | None = None) -> bool:
    """Whether a signature's timestamp header lies within the tolerance of now."""
    try:
        signed_at = float(unix_timestamp or "")
    except ValueError:
        return False
    return abs((time.time() if now is None else now) - signed_at) <= SIGNATURE_TOLERANCE_SECONDS
