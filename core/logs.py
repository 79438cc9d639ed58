"""Log lines: one JSON object a line in production, plain text locally, and one line per HTTP request.

``LOG_FORMAT`` picks the formatter (docs/observability.md). Structured fields travel as the
``extra`` of a log call; the text formatter shows the message alone, the JSON one the message and
every field. Nothing here ever logs a header, a query string, a body or a credential.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

# What every LogRecord carries anyway: anything else on a record came in a call's ``extra``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Only plain values become fields: Django's own records carry the request object, whose text has the query string.
_FIELD_TYPES = (str, int, float, bool, type(None))

REQUEST_ID_HEADER = "X-Request-ID"
# A request id from the proxy in front is kept only when it cannot smuggle anything into a log line.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
MASK = "***"

request_logger = logging.getLogger("notifyhub.request")


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...fields, "exception"?}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            # As the API's timestamps (UTC, milliseconds, Z), from the record's own clock reading.
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(
            (name, value)
            for name, value in vars(record).items()
            if name not in _RECORD_ATTRIBUTES and isinstance(value, _FIELD_TYPES)
        )
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def request_id(request: HttpRequest) -> str:
    """The proxy's ``X-Request-ID`` when it is a plain token, else a new one."""
    given = request.META.get("HTTP_X_REQUEST_ID", "")  # not request.headers, which copies every header first
    return given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def loggable_path(request: HttpRequest) -> str:
    """The path without its query string, a one-time token in it (password reset, email confirmation) masked."""
    match = request.resolver_match
    token = match.kwargs.get("token") if match else None
    return request.path.replace(token, MASK) if token else request.path


def account_id(request: HttpRequest) -> int | None:
    """The account of the API key that authenticated the request, if one did (DRF puts it on ``request.auth``)."""
    return getattr(getattr(request, "auth", None), "account_id", None)


class RequestLogMiddleware:
    """One log line per request, outermost in both middleware chains so it times and sees everything."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        rid = request_id(request)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = rid
        if request_logger.isEnabledFor(logging.INFO):
            self.log(request, response, rid, duration_ms=(time.perf_counter() - started) * 1000)
        return response

    @staticmethod
    def log(request: HttpRequest, response: HttpResponse, rid: str, *, duration_ms: float) -> None:
        path = loggable_path(request)
        fields = {
            "method": request.method,
            "path": path,
            "status": response.status_code,
            "duration_ms": round(duration_ms, 1),
            "account_id": account_id(request),
            "request_id": rid,
        }
        request_logger.info("%s %s %s %.1fms", request.method, path, response.status_code, duration_ms, extra=fields)
