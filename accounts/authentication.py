"""Who is calling: an API key, or the signed-in account holder (docs/rules.md, "Authentication")."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth import get_user_model
from django.utils.functional import SimpleLazyObject
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from accounts.models import Account, ApiKey
from accounts.selectors import api_key_find
from accounts.services import api_key_used
from core.api.exceptions import ApiKeyInBothHeaders, ApiKeyInvalid, ApiKeyMissing
from core.api.headers import header_api_key
from core.errors import AccountInactive, AccountMissing

# Both ways to send a key, named in every 401 (RFC 9110 section 11.6.1: one challenge per scheme).
API_KEY_CHALLENGE = 'Bearer realm="NotifyHub", ApiKey realm="NotifyHub", header="X-API-Key"'


def presented_api_key(request: Request) -> str | None:
    """The key from ``X-API-Key`` or ``Authorization: Bearer``; both at once is a 400."""
    header_key, bearer_key = header_api_key(request.META)
    if header_key and bearer_key:
        raise ApiKeyInBothHeaders()
    return header_key or bearer_key or None


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticates by API key: ``request.user`` is the holder, ``request.auth`` the ApiKey."""

    def authenticate(self, request: Request) -> tuple[Any, ApiKey]:
        raw_key = presented_api_key(request)
        if raw_key is None:
            raise ApiKeyMissing()
        api_key = api_key_find(raw_key=raw_key)
        if api_key is None:
            raise ApiKeyInvalid()
        require_usable(api_key.account)
        api_key_used(api_key)
        # Key-only endpoints never read the user: load it only if something does.
        user = SimpleLazyObject(lambda: get_user_model().objects.get(pk=api_key.account.user_id))
        return user, api_key

    def authenticate_header(self, request: Request) -> str:
        return API_KEY_CHALLENGE


class ApiKeyIfSentAuthentication(ApiKeyAuthentication):
    """An API key when the request carries one; otherwise the next authenticator (the session) decides."""

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:  # type: ignore[override]
        if presented_api_key(request) is None:
            return None
        return super().authenticate(request)


def request_account(request: Request) -> Account:
    """The account a request acts for: the API key's, or the signed-in user's."""
    if isinstance(request.auth, ApiKey):
        return request.auth.account
    account = Account.objects.filter(user_id=cast(int, request.user.pk)).first()
    if account is None:
        raise AccountMissing()
    require_usable(account)
    return account


def request_in_test_mode(request: Request) -> bool:
    """Whether the request acts in test mode: made with a test key (docs/rules.md, "Test mode"). A signed-in holder
    acts live."""
    return isinstance(request.auth, ApiKey) and request.auth.is_test


# Also the error of a job the worker meets for such an account (docs/job-states.md).
INACTIVE_ACCOUNT_MESSAGE = AccountInactive.message


def require_usable(account: Account) -> None:
    """Inactive and soft-deleted accounts are refused, however they authenticate."""
    if not account.is_usable:
        raise AccountInactive()
