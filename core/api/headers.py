"""Where a request carries its API key: ``X-API-Key``, or ``Authorization: Bearer``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def header_api_key(meta: Mapping[str, Any]) -> tuple[str, str]:
    """The key sent in ``X-API-Key`` and the one sent as ``Authorization: Bearer``; "" where none was.

    ``meta`` is a request's META or a WSGI environ: the same names.
    """
    header_key = str(meta.get("HTTP_X_API_KEY", "")).strip()
    scheme, _, token = str(meta.get("HTTP_AUTHORIZATION", "")).strip().partition(" ")
    bearer_key = token.strip() if scheme.lower() == "bearer" else ""
    return header_key, bearer_key
