"""The test API client, dispatching requests the way the WSGI application does in production."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from rest_framework import test

from core.handlers import ApiKeyMiddlewareMixin, needs_no_browser_middleware


class _ApiKeyClientHandler(ApiKeyMiddlewareMixin, test.ForceAuthClientHandler):
    pass


class _RoutingClientHandler(test.ForceAuthClientHandler):
    """Requests that carry an API key, and provider event posts, take the lean middleware, as in core.handlers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.api_key_handler = _ApiKeyClientHandler(*args, **kwargs)

    def __call__(self, environ: dict[str, Any]) -> HttpResponseBase:
        if needs_no_browser_middleware(environ):
            return self.api_key_handler(environ)
        return super().__call__(environ)


class APIClient(test.APIClient):
    def __init__(self, enforce_csrf_checks: bool = False, **defaults: Any) -> None:
        super().__init__(enforce_csrf_checks, **defaults)
        self.handler = _RoutingClientHandler(enforce_csrf_checks)
