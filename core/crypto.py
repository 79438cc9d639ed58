"""Secrets the service must use again (provider keys, signing secrets), Fernet-encrypted at rest.

The keys are ``FIELD_ENCRYPTION_KEYS``, the newest first: a secret is encrypted with the newest and read with
whichever key made it, so a new key is put first without making a stored secret unreadable, and ``manage.py
rotatekeys`` moves the stored ones to it before the old key goes (docs/operations.md, "Rotating the encryption
keys").
"""

from __future__ import annotations

from functools import cache, lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet(Fernet(key.encode()) for key in keys)


def _keys() -> tuple[str, ...]:
    return tuple(settings.FIELD_ENCRYPTION_KEYS)


def encrypt(plaintext: str) -> str:
    return _fernet(_keys()).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    return _decrypt(_keys(), token)


# Every signed delivery decrypts its account's secret, so decryptions are remembered. A token
# decrypts to the same text for ever, and a rotated secret is a new token, so the cache never
# answers with a stale secret. The key is the whole key list: a token remembered while its key
# was listed is not answered once that key is dropped.
@lru_cache(maxsize=4096)
def _decrypt(keys: tuple[str, ...], token: str) -> str:
    return _fernet(keys).decrypt(token.encode()).decode()


def reencrypt(token: str) -> str | None:
    """``token``'s secret encrypted with the newest key, or None when the newest key made it already.

    ``MultiFernet.rotate`` would encrypt it again either way; answering None lets a second rotation rewrite
    nothing. Raises ``InvalidToken`` when no listed key made it.
    """
    keys = _keys()
    try:
        _fernet(keys[:1]).decrypt(token.encode())
    except InvalidToken:
        return _fernet(keys).rotate(token.encode()).decode()
    return None
