"""The two kinds of API caller; every endpoint's view inherits one of these."""

from __future__ import annotations

from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated

from accounts.authentication import ApiKeyAuthentication, ApiKeyIfSentAuthentication
from accounts.throttle import ApiKeyRateThrottle
from core.api.views import ApiView


class ApiKeyView(ApiView):
    """Endpoints for API clients: key authentication, then the per-key rate limit."""

    authentication_classes = [ApiKeyAuthentication]
    throttle_classes = [ApiKeyRateThrottle]


class AccountHolderView(ApiView):
    """Endpoints for the account holder: the dashboard's session (with CSRF) or an API key."""

    authentication_classes = [ApiKeyIfSentAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ApiKeyRateThrottle]
