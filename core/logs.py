"""Log lines: one JSON object a line in production, plain text locally, and one line per HTTP request.

``LOG_FORMAT`` picks the formatter (docs/observability.md). Structured fields travel as the
``extra`` of a log call; the text formatter shows the message and the ids below, the JSON one the
message and every field. Nothing here ever logs a header, a query string, a body or a credential.

While a request or a job is handled, every line names it: the middleware (``request_id``), the
worker's task signals (``job_id``) and the engine (``attempt``) put them in a context variable (one
value per thread and per asyncio task, so concurrent requests never mix), and
:class:`LogContextFilter`, on the handler in ``LOGGING``, copies them onto each record, whichever
logger wrote it.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import MappingProxyType
from typing import Any, TypedDict, Unpack
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse
from django.utils.log import log_response

from core import tracing
from core.metrics import request_observed

# What every LogRecord carries anyway: anything else on a record came in a call's ``extra``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Only plain values become fields: Django's own records carry the request object, whose text has the query string.
_FIELD_TYPES = (str, int, float, bool, type(None))

REQUEST_ID_HEADER = "X-Request-ID"
# A request id from the proxy in front is kept only when it cannot smuggle anything into a log line.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
MASK = "***"

request_logger = logging.getLogger("notifyhub.request")


class LogContext(TypedDict, total=False):
    """The fields every line carries while a request or a job is handled (docs/observability.md)."""

    request_id: str
    job_id: str
    attempt: int


CONTEXT_FIELDS = tuple(LogContext.__annotations__)
LogContextToken = Token[Mapping[str, Any]]

_context: ContextVar[Mapping[str, Any]] = ContextVar("notifyhub_log_context", default=MappingProxyType({}))


def log_context_push(**fields: Unpack[LogContext]) -> LogContextToken:
    """Adds ``fields`` to every line written in this thread (or asyncio task) until the token is popped."""
    return _context.set({**_context.get(), **fields})


def log_context_pop(token: LogContextToken) -> None:
    """Back to the fields before the push that gave ``token``, dropping any pushed since."""
    _context.reset(token)


@contextmanager
def log_context(**fields: Unpack[LogContext]) -> Iterator[None]:
    """``fields`` on every line written inside the block (the engine's attempt, once it has claimed the job)."""
    token = log_context_push(**fields)
    try:
        yield
    finally:
        log_context_pop(token)


class LogContextFilter(logging.Filter):
    """Copies the context's fields onto each record the handler takes, and with traces on the current span's
    ``trace_id`` and ``span_id``; a call's own ``extra`` keeps its values."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            record.__dict__.setdefault(name, value)
        if tracing.log_ids is not None:
            for name, value in tracing.log_ids().items():
                record.__dict__.setdefault(name, value)
        return True


class TextFormatter(logging.Formatter):
    """The format string's line, then `` [request_id=... job_id=... attempt=...]`` for the fields the record has."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        carried = " ".join(f"{name}={record.__dict__[name]}" for name in CONTEXT_FIELDS if name in record.__dict__)
        return f"{line} [{carried}]" if carried else line


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


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` alone, as a log line, a span or a health record names a URL we call: a stored
    webhook URL has its credentials masked already, but a path or a query may carry a secret of its own (chat
    services put their webhook tokens in the path)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


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
    """One log line per request, outermost in both middleware chains so it times and sees everything; the request
    id on every line written meanwhile; the request's duration in ``/metrics``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        rid = request_id(request)
        context = log_context_push(request_id=rid)
        try:
            response = self.get_response(request)
            if response.status_code >= 400:
                log_error_answer(request, response)
        finally:
            log_context_pop(context)
        response[REQUEST_ID_HEADER] = rid
        seconds = time.perf_counter() - started
        request_observed(request, response.status_code, seconds)
        if request_logger.isEnabledFor(logging.INFO):
            self.log(request, response, rid, duration_ms=seconds * 1000)
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


def log_error_answer(request: HttpRequest, response: HttpResponse) -> None:
    """django.request's warning or error for a 4xx or 5xx answer, written here so that it carries the request id:
    Django writes it once the outermost middleware has returned, unless the answer's line is written already."""
    log_response("%s: %s", response.reason_phrase, loggable_path(request), response=response, request=request)
