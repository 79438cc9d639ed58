"""Requests that carry an API key, and the providers' event posts, skip the browser's middleware.

An API client authenticates every request with its key and keeps no cookies, so sessions,
CSRF tokens, the auth middleware's lazy user, the messages framework and clickjacking
headers do nothing for it but cost time on every request (docs/departures.md). The same holds
for a provider posting events to /api/v1/webhooks/, which proves itself with its own
credential, and for the probes and scrapers of the health check, the service's info and the
metrics, which need no credential or a token of their own. Such requests go to a handler built with
``settings.API_KEY_MIDDLEWARE`` instead; every other request, the dashboard's and the admin's
included, keeps ``settings.MIDDLEWARE``. The URLs and views are the same. Every /api/v1/
endpoint accepts a key; one that took only a session would find none here and refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIHandler

from core.api.headers import header_api_key

API_PREFIX = "/api/v1/"
PROVIDER_EVENTS_PREFIX = "/api/v1/webhooks/"
SESSIONLESS_PATHS = frozenset({"/api/v1/health", "/api/v1/info", "/metrics"})


def needs_no_browser_middleware(environ: Mapping[str, Any]) -> bool:
    """Whether the request is an API call that authenticates with a key, a provider's event post, or one
    of the sessionless paths (WSGI environ or request META)."""
    path = str(environ.get("PATH_INFO", ""))
    return (
        path in SESSIONLESS_PATHS
        or path.startswith(PROVIDER_EVENTS_PREFIX)
        or (path.startswith(API_PREFIX) and any(header_api_key(environ)))
    )


# Off the framework's road: docs/departures.md, "lean-chain".
class ApiKeyMiddlewareMixin(BaseHandler):
    """For a Django handler class: build the chain from ``settings.API_KEY_MIDDLEWARE``."""

    def load_middleware(self, is_async: bool = False) -> None:
        # Django builds a handler's chain from settings.MIDDLEWARE alone, so the list is swapped for this one call,
        # made once when the handler starts, before it serves anything.
        site_chain = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_KEY_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = site_chain


class ApiKeyWSGIHandler(ApiKeyMiddlewareMixin, WSGIHandler):
    pass


StartResponse = Callable[..., Any]


class NotifyHubWSGIApplication:
    """The WSGI application: API key requests to the lean handler, the rest to Django's own."""

    def __init__(self) -> None:
        self.site = WSGIHandler()
        self.api = ApiKeyWSGIHandler()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        handler = self.api if needs_no_browser_middleware(environ) else self.site
        return handler(environ, start_response)
