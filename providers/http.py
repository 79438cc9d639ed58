"""Outgoing HTTP to provider APIs, and one wording for network failures, whoever made the request.

Every provider call, an email sent through anymail or a domain call, goes through
:func:`provider_session`. The webhook client (notifications.delivery.http) words its network
failures with :func:`describe_network_error` too, so a client reads the same sentence for the
same fault.
"""

from __future__ import annotations

import threading
from http.cookiejar import DefaultCookiePolicy

import requests


class _ThreadSession(threading.local):
    session: requests.Session | None = None


_kept = _ThreadSession()


def provider_session() -> requests.Session:
    """This thread's session for the provider APIs, kept so that each provider's connection (TCP and TLS) is
    opened once and reused (docs/delivery-engine.md, "Email").

    One per thread rather than one per process: requests does not promise that a Session is safe to share between
    threads (https://github.com/psf/requests/issues/2766), and a thread makes one call at a time, so it needs no
    more than one connection per provider. A process's threads (Celery's thread pool) each make their own on first
    use; processes share none. urllib3 checks a kept connection before reusing it and opens another when the
    provider has closed it.
    """
    if _kept.session is None:
        _kept.session = _new_session()
    return _kept.session


def _new_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = "NotifyHub/1.0"
    # The session outlives a call and serves every account: a cookie set in answer to one account's call must not
    # ride along with the next account's.
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
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
