"""The two kinds of API caller; every endpoint's view inherits one of these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request

from accounts.authentication import ApiKeyAuthentication, ApiKeyIfSentAuthentication
from accounts.models import ApiKey, KeyScope
from accounts.throttle import ApiKeyRateThrottle
from core.api.exceptions import ApiKeyScopeRefused
from core.api.views import ApiView

# The scopes of key that may call an operation, by what it does (docs/rules.md, "API keys and scopes"). Each view
# names them for each method it serves, in ``key_scopes``.
ANY_KEY = frozenset(KeyScope)
READS = frozenset({KeyScope.FULL, KeyScope.READ})
SENDS = frozenset({KeyScope.FULL, KeyScope.SEND})
CHANGES = frozenset({KeyScope.FULL})
KeyScopes = Mapping[str, frozenset[KeyScope]]


class KeyScopeAllows(BasePermission):
    """An API key's scope must be among those the view names for the request's method: else 403. A method the view
    does not name is refused to every key, so an operation added without its scopes serves none. A session is not a
    key and passes; a method the view does not serve is left to its 405."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not isinstance(request.auth, ApiKey) or request.method == "OPTIONS":
            return True
        method = "GET" if request.method == "HEAD" else str(request.method)
        if method.lower() not in view.http_method_names or not hasattr(view, method.lower()):
            return True
        scopes: KeyScopes = getattr(view, "key_scopes", {})
        if request.auth.scope not in scopes.get(method, ()):
            raise ApiKeyScopeRefused()
        return True


class ApiKeyView(ApiView):
    """Endpoints for API clients: key authentication, the key's scope, then the per-key rate limit."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [KeyScopeAllows]
    throttle_classes = [ApiKeyRateThrottle]


class AccountHolderView(ApiView):
    """Endpoints for the account holder: the dashboard's session (with CSRF) or an API key, within its scope."""

    authentication_classes = [ApiKeyIfSentAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated, KeyScopeAllows]
    throttle_classes = [ApiKeyRateThrottle]
