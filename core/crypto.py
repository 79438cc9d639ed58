"""Secrets the service must use again (provider keys, signing secrets), Fernet-encrypted at rest."""

from __future__ import annotations

from functools import cache, lru_cache

from cryptography.fernet import Fernet
from django.conf import settings


@cache
def _fernet(key: str) -> Fernet:
    return Fernet(key.encode())


def encrypt(plaintext: str) -> str:
    return _fernet(settings.FIELD_ENCRYPTION_KEY).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    return _decrypt(settings.FIELD_ENCRYPTION_KEY, token)


# Every signed delivery decrypts its account's secret, so decryptions are remembered. A token
# decrypts to the same text for ever, and a rotated secret is a new token, so the cache never
# answers with a stale secret.
@lru_cache(maxsize=4096)
def _decrypt(key: str, token: str) -> str:
    return _fernet(key).decrypt(token.encode()).decode()
