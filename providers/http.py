"""Outgoing HTTP to provider APIs, and one wording for network failures, whoever made the request.

Sending goes through anymail's own session; domain calls through :func:`provider_session`. The
webhook client (notifications.delivery.http) words its network failures with
:func:`describe_network_error` too, so a client reads the same sentence for the same fault.
"""

from __future__ import annotations

from functools import cache

import requests


@cache
def provider_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = "NotifyHub/1.0"
    return session


def caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``kind`` is anywhere in the chain requests and urllib3 wrap a socket error in."""
    pending: list[BaseException] = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return True
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        pending.extend(item for item in linked if isinstance(item, BaseException))
    return False


def describe_network_error(error: requests.RequestException, *, timeout_seconds: float) -> str:
    """A short sentence for a request that got no HTTP response; never a stack trace."""
    if isinstance(error, requests.Timeout):
        return f"Timed out after {timeout_seconds:g}s"
    if isinstance(error, requests.exceptions.SSLError):
        reason = "certificate verify failed" if "CERTIFICATE_VERIFY" in str(error) else "handshake failed"
        return f"TLS error: {reason}"
    if caused_by(error, ConnectionRefusedError):
        return "Connection refused"
    if "resolve" in str(error).lower():
        return "DNS lookup failed"
    if isinstance(error, requests.ConnectionError):
        return "Connection failed"
    return f"Request failed ({type(error).__name__})"
