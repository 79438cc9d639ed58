"""Secrets the service must use again (provider keys, signing secrets), Fernet-encrypted at rest."""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet
from django.conf import settings


@cache
def _fernet(key: str) -> Fernet:
    return Fernet(key.encode())


def encrypt(plaintext: str) -> str:
    return _fernet(settings.FIELD_ENCRYPTION_KEY).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet(settings.FIELD_ENCRYPTION_KEY).decrypt(token.encode()).decode()
