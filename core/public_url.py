"""Absolute URLs NotifyHub gives out (emailed links, receiver URLs), under the configured ``PUBLIC_URL``."""

from __future__ import annotations

from django.conf import settings


def public_url(path: str) -> str:
    """``path`` (absolute, as ``reverse`` gives it) under ``PUBLIC_URL``; never built from a request's Host."""
    return settings.PUBLIC_URL.rstrip("/") + path
