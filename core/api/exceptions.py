"""Every API error becomes ``{"error": message}`` with its status; the renderer adds the envelope."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from core.errors import Conflict, DomainError, InvalidRequest, NotFound, NotPermitted, UpstreamFailed
from core.unavailable import UNAVAILABLE_MESSAGE, is_service_fault, log_service_fault, retry_after_header

logger = logging.getLogger(__name__)

# The one mapping from the domain's errors to HTTP; a subclass takes its nearest listed base's status.
DOMAIN_ERROR_STATUS: dict[type[DomainError], int] = {
    InvalidRequest: 400,
    NotPermitted: 403,
    NotFound: 404,
    Conflict: 409,
    UpstreamFailed: 502,
}


class PayloadTooLarge(exceptions.APIException):
    status_code = 413


def domain_error_status(error: DomainError) -> int:
    return next(DOMAIN_ERROR_STATUS[kind] for kind in type(error).__mro__ if kind in DOMAIN_ERROR_STATUS)


def first_message(detail: Any) -> str:
    """The first human message inside a DRF error detail (dicts keep field order)."""
    if isinstance(detail, dict):
        return first_message(next(iter(detail.values()), "Invalid request"))
    if isinstance(detail, list):
        return first_message(detail[0]) if detail else "Invalid request"
    return str(detail)


def _status_and_message(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, DomainError):
        return domain_error_status(exc), exc.message
    if isinstance(exc, Http404 | exceptions.NotFound):
        return 404, "Not found"
    if isinstance(exc, PermissionDenied):
        return 403, "Permission denied"
    if isinstance(exc, exceptions.NotAuthenticated):
        return 401, "Sign in or send an API key"
    if isinstance(exc, exceptions.Throttled):
        return 429, "Rate limit exceeded"
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return 415, "Content-Type must be application/json"
    if isinstance(exc, exceptions.APIException):
        return exc.status_code, first_message(exc.detail)
    if is_service_fault(exc):
        log_service_fault(exc)
        return 503, UNAVAILABLE_MESSAGE
    logger.exception("Unhandled error in API view")
    return 500, "Internal server error"


def envelope_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """A 503 says when to come back (``Retry-After``); a 429 does not (docs/rules.md)."""
    status, message = _status_and_message(exc)
    headers = retry_after_header() if status == 503 else {}
    # DRF puts the authenticator's challenge on a 401 it raises; the client learns how to sign in.
    challenge = getattr(exc, "auth_header", None)
    if challenge:
        headers["WWW-Authenticate"] = challenge
    return Response({"error": message}, status=status, headers=headers or None)
