"""API key format and digests: ``nh_`` followed by 64 lowercase hex characters."""

from __future__ import annotations

import hashlib
import re
import secrets

API_KEY_PATTERN = re.compile(r"nh_[0-9a-f]{64}")


def generate_api_key() -> str:
    return "nh_" + secrets.token_hex(32)


def api_key_digest(raw_key: str) -> str:
    # Keys carry 256 random bits, so a plain SHA-256 cannot be brute-forced; no salt or KDF needed.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def is_well_formed(raw_key: str) -> bool:
    return API_KEY_PATTERN.fullmatch(raw_key) is not None
