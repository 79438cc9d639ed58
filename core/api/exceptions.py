"""Every API error becomes ``{"error": message, "code": code}`` with its status; the renderer adds the envelope.

The domain's errors (core.errors) get their status from one table; the API's own conditions, below, carry
theirs; what the framework raises is answered as one of those (docs/errors.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.envelope import error_response
from core.errors import CodedError, Conflict, DomainError, InvalidRequest, NotFound, NotPermitted, UpstreamFailed
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


class ApiError(CodedError):
    """A condition the HTTP layer answers itself, with its own status: the request is refused before the domain's
    rules are asked (its headers, its body, its rate), or the service failed."""

    status: ClassVar[int]

    def response(self, *, details: Mapping[str, Any] | None = None) -> JsonResponse:
        """This error in the envelope, answered at once: for code paths outside DRF's views."""
        return error_response(self.status, self, details=details)


class BadRequest(ApiError):
    """Django refused the request before any view (a Host it does not serve, a body it cannot read)."""

    status = 400
    code = "bad_request"
    message = "Bad request"


class ApiKeyInBothHeaders(ApiError):
    status = 400
    code = "api_key_in_both_headers"
    message = "Send the API key in one header only"


class ValidationFailed(ApiError):
    """A body or query field breaks its rule; the message names the first such field."""

    status = 400
    code = "validation_failed"

    def __init__(self, *, reason: str) -> None:
        self.message = reason
        super().__init__()


class UnknownField(ValidationFailed):
    """A body holds a field its operation does not know: refused before any field is checked, never dropped
    (docs/rules.md, "Order of checks on a send"). The message names the first such field in the body's order."""

    code = "unknown_field"

    @staticmethod
    def reason_for(name: str) -> str:
        return f"Unknown field: {name}"


# The refusals a serializer names by its ValidationError's code; any other is validation_failed.
CODED_VALIDATION: dict[str, type[ValidationFailed]] = {UnknownField.code: UnknownField}


class ApiKeyMissing(ApiError):
    status = 401
    code = "api_key_missing"
    message = "API key is missing"


class ApiKeyInvalid(ApiError):
    status = 401
    code = "api_key_invalid"
    message = "Invalid API key"


class ApiKeyScopeRefused(ApiError):
    """The key is valid, but its scope does not cover the operation (docs/rules.md, "API keys and scopes")."""

    status = 403
    code = "api_key_scope_refused"
    message = "This API key's scope does not allow this request"


class ApiKeyModeRefused(ApiError):
    """A test key on an operation that reads or changes live data (docs/rules.md, "Test mode")."""

    status = 403
    code = "test_key_refused"
    message = "Test keys cannot read or change live data; use a live key"


class AuthenticationRequired(ApiError):
    """An account holder's endpoint called with neither a session nor an API key."""

    status = 401
    code = "authentication_required"
    message = "Sign in or send an API key"


class Forbidden(ApiError):
    status = 403
    code = "permission_denied"

    def __init__(self, *, reason: str = "Permission denied") -> None:
        self.message = reason
        super().__init__()


class CsrfFailed(ApiError):
    """A session's unsafe request without its CSRF token; the message is Django's reason."""

    status = 403
    code = "csrf_failed"

    def __init__(self, *, reason: str) -> None:
        self.message = reason
        super().__init__()


class PathNotFound(ApiError):
    """No route, or nothing there: the domain's own not-founds name what is missing."""

    status = 404
    code = "not_found"
    message = "Not found"


class MethodNotAllowed(ApiError):
    status = 405
    code = "method_not_allowed"

    def __init__(self, *, method: str) -> None:
        self.message = f'Method "{method}" not allowed.'
        super().__init__()


class LengthRequired(ApiError):
    """A chunked body: Django reads a body by its Content-Length alone, and would see an empty one."""

    status = 411
    code = "length_required"
    message = "Send the request body with a Content-Length header, not chunked"


class PayloadTooLarge(ApiError):
    status = 413
    code = "payload_too_large"

    def __init__(self, *, limit_bytes: int, subject: str = "Request body") -> None:
        self.message = f"{subject} must be at most {limit_bytes // 1024} KB"
        super().__init__()


class UnsupportedMediaType(ApiError):
    status = 415
    code = "unsupported_media_type"
    message = "Content-Type must be application/json"


class RateLimited(ApiError):
    """No ``Retry-After`` is sent (docs/rules.md, "Limits")."""

    status = 429
    code = "rate_limited"
    message = "Rate limit exceeded"


class InternalError(ApiError):
    status = 500
    code = "internal_error"
    message = "Internal server error"


class ServiceUnavailable(ApiError):
    """The database or Redis cannot be reached: come back after ``Retry-After`` (docs/rules.md)."""

    status = 503
    code = "service_unavailable"
    message = UNAVAILABLE_MESSAGE


def error_status(condition: type[CodedError]) -> int:
    """An API error's own status, or a domain error's from DOMAIN_ERROR_STATUS."""
    if issubclass(condition, ApiError):
        return condition.status
    return next(DOMAIN_ERROR_STATUS[kind] for kind in condition.__mro__ if kind in DOMAIN_ERROR_STATUS)


def first_message(detail: Any) -> str:
    """The first human message inside a DRF error detail (dicts keep field order)."""
    return str(_first_detail(detail))


def _first_detail(detail: Any) -> Any:
    if isinstance(detail, dict):
        return _first_detail(next(iter(detail.values()), "Invalid request"))
    if isinstance(detail, list):
        return _first_detail(detail[0]) if detail else "Invalid request"
    return detail


def validation_failed(detail: Any) -> ValidationFailed:
    """A serializer's refusal as the API answers it: its first message, with the code that message was raised
    with where CODED_VALIDATION names it (an ``ErrorDetail`` keeps its code), else ``validation_failed``."""
    first = _first_detail(detail)
    return CODED_VALIDATION.get(getattr(first, "code", ""), ValidationFailed)(reason=str(first))


def coded_error(exc: Exception, request: Request) -> CodedError:
    """The condition an exception is answered as: the domain's and the API's own as they are, the framework's
    as the API's, a service's fault as 503, and anything else as 500."""
    if isinstance(exc, CodedError):
        return exc
    if isinstance(exc, exceptions.ValidationError):
        return validation_failed(exc.detail)
    if isinstance(exc, Http404 | exceptions.NotFound):
        return PathNotFound()
    if isinstance(exc, exceptions.NotAuthenticated):
        return AuthenticationRequired()
    if isinstance(exc, exceptions.Throttled):
        return RateLimited()
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return UnsupportedMediaType()
    if isinstance(exc, exceptions.MethodNotAllowed):
        return MethodNotAllowed(method=str(request.method))
    if isinstance(exc, PermissionDenied):
        return Forbidden()
    if isinstance(exc, exceptions.PermissionDenied):
        return Forbidden(reason=first_message(exc.detail))
    if is_service_fault(exc):
        log_service_fault(exc)
        return ServiceUnavailable()
    logger.exception("Unhandled error in API view")
    return InternalError()


def envelope_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """A 503 says when to come back (``Retry-After``); a 429 does not (docs/rules.md)."""
    request, view = context["request"], context["view"]
    error = coded_error(exc, request)
    status = error_status(type(error))
    headers = retry_after_header() if status == 503 else {}
    # A 401 names how to authenticate: the view's first authenticator's challenge, as DRF's own handling gives.
    challenge = view.get_authenticate_header(request) if status == 401 else None
    if challenge:
        headers["WWW-Authenticate"] = challenge
    return Response({"error": error.message, "code": error.code}, status=status, headers=headers or None)
