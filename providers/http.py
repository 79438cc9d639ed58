"""The one HTTP client for provider APIs (domain calls). Sending goes through anymail's own session."""

from __future__ import annotations

from functools import cache

import requests


@cache
def provider_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = "NotifyHub/1.0"
    return session
