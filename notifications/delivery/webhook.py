"""Delivering a webhook job (spec section 4, "Outgoing request rules"; section 6 signing)."""

from __future__ import annotations

import time
from http import HTTPStatus

import requests
from django.conf import settings
from requests.structures import CaseInsensitiveDict
from requests_hardened.ip_filter import InvalidIPAddress

from accounts.selectors import signing_secret_get
from notifications.delivery.http import webhook_session
from notifications.delivery.outcome import AttemptOutcome
from notifications.models import Job
from notifyhub.api.fields import json_bytes
from notifyhub.signing import signature_header

USER_AGENT = "NotifyHub/1.0"
EXCERPT_BYTES = 1024
# Bodies up to this size are read to the end so the connection can be reused.
DRAIN_BYTES = 64 * 1024


def build_headers(job: Job, *, attempt: int, body: bytes, secret: str | None, now: int) -> CaseInsensitiveDict[str]:
    """Ours, then the customer's on top, then the ones a customer header may never replace."""
    headers: CaseInsensitiveDict[str] = CaseInsensitiveDict(
        {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    )
    headers.update(job.payload.get("headers") or {})
    headers["X-Webhook-Id"] = str(job.id)
    headers["X-Webhook-Attempt"] = str(attempt)
    for name in ("X-Webhook-Timestamp", "X-Webhook-Signature"):
        headers.pop(name, None)
    if secret:
        headers["X-Webhook-Timestamp"] = str(now)
        headers["X-Webhook-Signature"] = signature_header(secret, now, body)
    return headers


def deliver_webhook(job: Job, *, attempt: int) -> AttemptOutcome:
    body = json_bytes(job.payload["payload"])
    secret = signing_secret_get(account_id=job.account_id)
    headers = build_headers(job, attempt=attempt, body=body, secret=secret, now=int(time.time()))
    started = time.monotonic()
    try:
        response = webhook_session().request(
            job.payload["method"], job.payload["url"], data=body, headers=headers, stream=True
        )
    except requests.RequestException as error:
        return _network_failure(error, duration_ms=_elapsed_ms(started))
    try:
        excerpt = _read_excerpt(response)
    finally:
        response.close()
    return _classify(response.status_code, response.reason, excerpt, duration_ms=_elapsed_ms(started))


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _read_excerpt(response: requests.Response) -> str:
    try:
        head = response.raw.read(DRAIN_BYTES, decode_content=True) or b""
    except (requests.RequestException, OSError, ValueError):
        head = b""
    return head[:EXCERPT_BYTES].decode("utf-8", errors="replace")


def _status_text(status: int, reason: str | None) -> str:
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    return f"{status} {reason}".strip()


def _classify(status: int, reason: str | None, excerpt: str, *, duration_ms: int) -> AttemptOutcome:
    details = {"response_status": status, "duration_ms": duration_ms, "response_excerpt": excerpt}
    if 200 <= status < 300:
        return AttemptOutcome(delivered=True, **details)  # type: ignore[arg-type]
    message = _status_text(status, reason)
    if 300 <= status < 400:
        return AttemptOutcome.failure(f"{message} (redirects are not followed)", retryable=False, **details)
    # Spec section 8: 4xx is never retried; 5xx is.
    return AttemptOutcome.failure(message, retryable=status >= 500, **details)


def _caused_by(error: BaseException, kind: type[BaseException]) -> bool:
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


def _network_failure(error: requests.RequestException, *, duration_ms: int) -> AttemptOutcome:
    if isinstance(error, InvalidIPAddress):
        message = f"Refused: the URL resolves to a non-public address ({error.args[0]})"
        return AttemptOutcome.failure(message, retryable=False, duration_ms=duration_ms)
    if isinstance(error, requests.Timeout):
        message = f"Timed out after {settings.WEBHOOK_TIMEOUT_SECONDS}s"
    elif isinstance(error, requests.exceptions.SSLError):
        message = "TLS error: " + (
            "certificate verify failed" if "CERTIFICATE_VERIFY" in str(error) else "handshake failed"
        )
    elif _caused_by(error, ConnectionRefusedError):
        message = "Connection refused"
    elif "resolve" in str(error).lower() or "Name or service not known" in str(error):
        message = "DNS lookup failed"
    elif isinstance(error, requests.ConnectionError):
        message = "Connection failed"
    else:
        message = f"Request failed ({type(error).__name__})"
    return AttemptOutcome.failure(message, retryable=True, duration_ms=duration_ms)
