"""The two kinds of API caller; every endpoint's view inherits one of these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request

from accounts.authentication import ApiKeyAuthentication, ApiKeyIfSentAuthentication
from accounts.models import ApiKey, KeyMode, KeyScope
from accounts.throttle import ApiKeyRateThrottle
from core.api.exceptions import ApiKeyModeRefused, ApiKeyScopeRefused
from core.api.views import ApiView

# The scopes of key that may call an operation, by what it does (docs/rules.md, "API keys and scopes"). Each view
# names them for each method it serves, in ``key_scopes``.
ANY_KEY = frozenset(KeyScope)
READS = frozenset({KeyScope.FULL, KeyScope.READ})
SENDS = frozenset({KeyScope.FULL, KeyScope.SEND})
CHANGES = frozenset({KeyScope.FULL})
KeyScopes = Mapping[str, frozenset[KeyScope]]

# The modes of key that may call an operation (docs/rules.md, "Test mode"). Each view names them for each method it
# serves, in ``key_modes``: ANY_MODE for what test mode is for (the sends and batches, the caller's own jobs, ping),
# LIVE_ONLY for every operation that reads or changes the account's live data.
ANY_MODE = frozenset(KeyMode)
LIVE_ONLY = frozenset({KeyMode.LIVE})
KeyModes = Mapping[str, frozenset[KeyMode]]


def key_and_method(request: Request, view: Any) -> tuple[ApiKey, str] | None:
    """The API key a request was made with, and the method whose keys the view names (HEAD is GET's). None when
    there is nothing to check: a session is not a key, OPTIONS describes, and a method the view does not serve is
    left to its 405."""
    if not isinstance(request.auth, ApiKey) or request.method == "OPTIONS":
        return None
    method = "GET" if request.method == "HEAD" else str(request.method)
    if method.lower() not in view.http_method_names or not hasattr(view, method.lower()):
        return None
    return request.auth, method


class KeyScopeAllows(BasePermission):
    """An API key's scope must be among those the view names for the request's method: else 403. A method the view
    does not name is refused to every key, so an operation added without its scopes serves none."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if checked := key_and_method(request, view):
            key, method = checked
            scopes: KeyScopes = getattr(view, "key_scopes", {})
            if key.scope not in scopes.get(method, ()):
                raise ApiKeyScopeRefused()
        return True


class KeyModeAllows(BasePermission):
    """A test key only where the view names test mode for the request's method: else 403, with its own code. A
    method the view does not name is refused to test keys, so an operation added without its modes never lets a
    test key touch live data. A live key is never refused here."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if checked := key_and_method(request, view):
            key, method = checked
            modes: KeyModes = getattr(view, "key_modes", {})
            if key.is_test and KeyMode.TEST not in modes.get(method, LIVE_ONLY):
                raise ApiKeyModeRefused()
        return True


class ApiKeyView(ApiView):
    """Endpoints for API clients: key authentication, the key's scope and mode, then the per-key rate limit."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [KeyScopeAllows, KeyModeAllows]
    throttle_classes = [ApiKeyRateThrottle]


class AccountHolderView(ApiView):
    """Endpoints for the account holder: the dashboard's session (with CSRF) or an API key, within its scope and
    mode."""

    authentication_classes = [ApiKeyIfSentAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated, KeyScopeAllows, KeyModeAllows]
    throttle_classes = [ApiKeyRateThrottle]
