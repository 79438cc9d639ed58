from __future__ import annotations

from accounts.crypto import decrypt
from accounts.keys import api_key_digest, is_well_formed
from accounts.models import Account, ApiKey, ProviderKey, SigningSecret
from providers.base import Credentials


def api_key_find(*, raw_key: str) -> ApiKey | None:
    """The active key matching ``raw_key``, with its account and user, in one query."""
    if not is_well_formed(raw_key):
        return None
    return (
        ApiKey.objects.select_related("account__user")
        .filter(digest=api_key_digest(raw_key), revoked_at__isnull=True)
        .first()
    )


def account_get_by_email(*, email: str) -> Account | None:
    return Account.objects.select_related("user").filter(user__email__iexact=email).first()


def signing_secret_get(*, account_id: int) -> str | None:
    """The plaintext signing secret of the account, or None when it has none."""
    encrypted = SigningSecret.objects.filter(account_id=account_id).values_list("encrypted_secret", flat=True).first()
    return decrypt(encrypted) if encrypted else None


def provider_credentials(*, account: Account) -> dict[str, Credentials]:
    """The account's providers in priority order, with their decrypted credentials."""
    return {
        key.provider: Credentials(
            api_key=decrypt(key.encrypted_api_key),
            account_token=decrypt(key.encrypted_account_token) if key.encrypted_account_token else None,
        )
        for key in ProviderKey.objects.filter(account=account).order_by("priority", "created_at")
    }


def configured_providers(*, account: Account) -> list[str]:
    """Names of the account's providers in priority order; nothing is decrypted."""
    return list(
        ProviderKey.objects.filter(account=account)
        .order_by("priority", "created_at")
        .values_list("provider", flat=True)
    )
