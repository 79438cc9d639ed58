"""Delivering a webhook job: one signed HTTP request per attempt (docs/delivery-engine.md, "Webhooks")."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils.http import parse_http_date_safe
from requests.structures import CaseInsensitiveDict
from requests_hardened.ip_filter import InvalidIPAddress

from core.signing import signature_header, standard_signature_header
from notifications.delivery.http import stored_url, webhook_session
from notifications.delivery.outcome import AttemptOutcome, elapsed_ms
from notifications.delivery.wire import json_bytes
from notifications.models import Job
from notifications.secret_headers import with_secret_headers
from providers.http import describe_network_error

USER_AGENT = "NotifyHub/1.0"
EXCERPT_BYTES = 1024
# Bodies up to this size are read to the end so the connection can be reused.
DRAIN_BYTES = 64 * 1024
# The longest wait a receiver's Retry-After may set before the next attempt (docs/rules.md, "Webhooks").
RETRY_AFTER_MAX_SECONDS = 3600
NON_PUBLIC_ADDRESS_MESSAGE = "Refused: the URL resolves to a non-public address"
# A message's delivery also retries the 4xx a customer's endpoint answers while busy or briefly away, and waits what
# their Retry-After asks (docs/customer-webhooks.md, "Retries"); a plain webhook's 4xx ends it.
MESSAGE_RETRIED_4XX = frozenset({HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_EARLY, HTTPStatus.TOO_MANY_REQUESTS})

logger = logging.getLogger(__name__)


# Only a signed delivery carries these, and only as NotifyHub sets them: a custom header of such a name is dropped.
SIGNING_HEADERS = (
    "X-Webhook-Timestamp",
    "X-Webhook-Signature",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
)


def build_headers(
    *, webhook_id: str, attempt: int, custom: Mapping[str, str], body: bytes, secrets: Sequence[str], now: int
) -> CaseInsensitiveDict[str]:
    """Ours, then the customer's on top, then the ones a customer header may never replace; signed with each of
    ``secrets`` (newest first: after a rotation, the one it replaced signs too for a while)."""
    headers: CaseInsensitiveDict[str] = CaseInsensitiveDict(
        {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    )
    headers.update(custom)
    headers["X-Webhook-Id"] = webhook_id
    headers["X-Webhook-Attempt"] = str(attempt)
    for name in SIGNING_HEADERS:
        headers.pop(name, None)
    if secrets:
        newest, *older = secrets
        headers["X-Webhook-Timestamp"] = str(now)
        headers["X-Webhook-Signature"] = signature_header(newest, now, body, *older)
        # The same delivery as the Standard Webhooks specification names it, so its libraries verify it.
        headers["webhook-id"] = webhook_id
        headers["webhook-timestamp"] = str(now)
        headers["webhook-signature"] = standard_signature_header(newest, webhook_id, now, body, *older)
    return headers


def deliver_webhook(
    job: Job, *, attempt: int, signing_secrets: Sequence[str], endpoint_url: str | None = None
) -> AttemptOutcome:
    """One attempt; signed when the account has a signing secret (the claim read them with the job). A test job's
    makes no request, nor the address lookup before it (docs/rules.md, "Test mode").

    A message's delivery goes to ``endpoint_url``, its endpoint's URL as it is now (credentials in it), with its
    message's id, signed with ``signing_secrets``, the endpoint's (docs/customer-webhooks.md).
    """
    if job.test:
        return AttemptOutcome.test_delivery()
    body = json_bytes(job.payload["payload"])
    headers = build_headers(
        webhook_id=str(job.message_id or job.id),
        attempt=attempt,
        custom=with_secret_headers(job.payload.get("headers") or {}, job.secret_headers),
        body=body,
        secrets=signing_secrets,
        now=int(time.time()),
    )
    url = endpoint_url or stored_url(job.payload["url"], job.url_credentials)
    retried_4xx = MESSAGE_RETRIED_4XX if job.message_id else frozenset()
    return send(job.payload["method"], url, body=body, headers=headers, retried_4xx=retried_4xx)


def send(
    method: str,
    url: str,
    *,
    body: bytes,
    headers: Mapping[str, str],
    excerpt_bytes: int = EXCERPT_BYTES,
    timeout_seconds: int | None = None,
    retried_4xx: frozenset[int] = frozenset(),
) -> AttemptOutcome:
    """One request through the webhook client, judged as a delivery attempt (``timeout_seconds``
    defaults to WEBHOOK_TIMEOUT_SECONDS; ``retried_4xx``, the 4xx retried as a 5xx is)."""
    timeout = timeout_seconds or settings.WEBHOOK_TIMEOUT_SECONDS
    started = time.monotonic()
    try:
        response = webhook_session().request(
            method, url, data=body, headers=headers, stream=True, timeout=(timeout, timeout)
        )
    except requests.RequestException as error:
        return _network_failure(error, url=url, duration_ms=elapsed_ms(started), timeout_seconds=timeout)
    try:
        excerpt = _read_excerpt(response, excerpt_bytes)
    finally:
        response.close()
    return _classify(
        response.status_code,
        response.reason,
        excerpt,
        duration_ms=elapsed_ms(started),
        retry_after=response.headers.get("Retry-After"),
        retried_4xx=retried_4xx,
    )


def _read_excerpt(response: requests.Response, excerpt_bytes: int) -> str:
    try:
        head = response.raw.read(DRAIN_BYTES, decode_content=True) or b""
    except (requests.RequestException, OSError, ValueError):
        head = b""
    return head[:excerpt_bytes].decode("utf-8", errors="replace")


def _status_text(status: int, reason: str | None) -> str:
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    return f"{status} {reason}".strip()


def _classify(
    status: int,
    reason: str | None,
    excerpt: str,
    *,
    duration_ms: int,
    retry_after: str | None = None,
    retried_4xx: frozenset[int] = frozenset(),
) -> AttemptOutcome:
    details = {"response_status": status, "duration_ms": duration_ms, "response_excerpt": excerpt}
    if 200 <= status < 300:
        return AttemptOutcome(delivered=True, **details)  # type: ignore[arg-type]
    message = _status_text(status, reason)
    if 300 <= status < 400:
        return AttemptOutcome.failure(f"{message} (redirects are not followed)", retryable=False, **details)
    # 4xx is never retried, but for ``retried_4xx``; 5xx is (docs/rules.md, "Webhooks"). Of the answers that carry
    # Retry-After, 503 (RFC 9110) and 429 (RFC 6585), a plain webhook's 429 is a 4xx and fails at once, so only a
    # 503's wait is used, and a retried 4xx's.
    retryable = status >= 500 or status in retried_4xx
    wait = None
    if (status == HTTPStatus.SERVICE_UNAVAILABLE or status in retried_4xx) and retry_after:
        wait = retry_after_seconds(retry_after, now=time.time())
    return AttemptOutcome.failure(message, retryable=retryable, retry_after_seconds=wait, **details)


def retry_after_seconds(value: str, *, now: float) -> int | None:
    """The wait a Retry-After value asks for (RFC 9110 section 10.2.3: delta-seconds or an HTTP date), at most
    RETRY_AFTER_MAX_SECONDS; None when it is malformed or asks for no wait (0, a date not after ``now``)."""
    value = value.strip()
    if value.isascii() and value.isdigit():
        # Its length first: int() refuses more than 4,300 digits, and any number longer than the cap's is above it.
        digits = value.lstrip("0") or "0"
        seconds = RETRY_AFTER_MAX_SECONDS if len(digits) > len(str(RETRY_AFTER_MAX_SECONDS)) else int(digits)
    else:
        date = parse_http_date_safe(value)
        if date is None:
            return None
        seconds = math.ceil(date - now)
    return min(seconds, RETRY_AFTER_MAX_SECONDS) if seconds > 0 else None


def _network_failure(
    error: requests.RequestException, *, url: str, duration_ms: int, timeout_seconds: int
) -> AttemptOutcome:
    if isinstance(error, InvalidIPAddress):
        # The holder reads only that the address is not public: which internal address a name leads to is a fact
        # about NotifyHub's network. Operators get it here.
        logger.warning("Refused a webhook to %s: it resolves to %s", urlsplit(url).hostname, error.args[0])
        return AttemptOutcome.failure(NON_PUBLIC_ADDRESS_MESSAGE, retryable=False, duration_ms=duration_ms)
    message = describe_network_error(error, timeout_seconds=timeout_seconds)
    return AttemptOutcome.failure(message, retryable=True, duration_ms=duration_ms)
