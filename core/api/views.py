"""What every API endpoint shares: one response format, envelope errors outside DRF, and one view serving an
operation at more than one mount."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request, server_error
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from core.api.exceptions import (
    BadRequest,
    CsrfFailed,
    InternalError,
    LengthRequired,
    PathNotFound,
    ServiceUnavailable,
    first_message,
)
from core.api.schema import ErrorAnswer, MountedSchema, OperationText
from core.unavailable import RETRY_AFTER_SECONDS, is_service_fault, log_service_fault

if TYPE_CHECKING:
    from rest_framework.views import AsView, GenericView


class EnvelopeNegotiation(DefaultContentNegotiation):
    """Every API response is the JSON envelope, whatever the request's Accept header says.

    The API speaks one format, so there is nothing to choose, and a client that asks for
    another gets JSON rather than a 406, as JSON-only APIs do. This is DRF's documented way
    to ignore the client (its "Custom content negotiation" guide). Request bodies are still
    matched to parsers by Content-Type (415).
    """

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


BODY_METHODS = {"POST", "PUT", "PATCH"}


class ApiView(APIView):
    """The base of every API endpoint: the envelope, and the error handler's messages."""

    content_negotiation_class = EnvelopeNegotiation

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Django reads a body by its Content-Length alone: a chunked body would arrive empty
        # and be answered as if fields were missing.
        if (
            request.method in BODY_METHODS
            and "HTTP_TRANSFER_ENCODING" in request.META
            and not request.META.get("CONTENT_LENGTH")
        ):
            raise LengthRequired()
        super().initial(request, *args, **kwargs)

    def perform_authentication(self, request: Request) -> None:
        try:
            super().perform_authentication(request)
        except exceptions.PermissionDenied as refusal:
            # DRF's session authentication refuses an unsafe request without its CSRF token with this, and no
            # authenticator refuses with it otherwise: the API key's refusals are the API's own conditions.
            raise CsrfFailed(reason=first_message(refusal.detail)) from None


@dataclass(frozen=True, eq=False)
class Mount:
    """One place a :class:`MountedView` is served: who may call it there, and what its OpenAPI text says there.

    Compared by identity: each mount is one constant, and an operation's text gives its words per mount.
    """

    # The base view whose authentication, permissions and throttles apply here (accounts/access.py's two).
    access: type[APIView]
    # Starts each operation id here: "user" makes "user_jobs_list".
    operation_prefix: str
    # Ends each summary here, e.g. who may call: " (dashboard session or API key)".
    summary_note: str = ""
    # What an error status means to the callers here, over core/api/schema.py's ERROR_DESCRIPTIONS.
    error_descriptions: Mapping[int, ErrorAnswer] = field(default_factory=dict)

    def operation_id(self, name: str) -> str:
        return f"{self.operation_prefix}_{name}"


class MountedView(ApiView):
    """An operation served at more than one URL, each for its own callers: one class, mounted at each URL with
    ``as_view(mount=...)``, so that what the operation does and what its document says are written once.

    Who may call comes from the mount. The OpenAPI text is the class's ``openapi``, which :class:`MountedSchema` reads
    as each mount says.
    """

    schema = MountedSchema()
    openapi: OperationText
    # The mount an instance serves, from its URL's as_view(), which sets only attributes the class has.
    mount: Mount | None = None

    @classmethod
    def as_view(cls, **initkwargs: Any) -> AsView[GenericView]:
        mount = initkwargs.get("mount")
        if not isinstance(mount, Mount):
            raise ImproperlyConfigured(f"{cls.__name__} is served only at a mount: as_view(mount=...)")
        # As Django sets any attribute per URL: the mount's callers are authenticated, permitted and throttled as
        # its access view's are, here and in the OpenAPI document, which builds each view with these arguments.
        return super().as_view(
            authentication_classes=mount.access.authentication_classes,
            permission_classes=mount.access.permission_classes,
            throttle_classes=mount.access.throttle_classes,
            **initkwargs,
        )


class SchemaView(SpectacularAPIView):
    """The OpenAPI document, generated by one thread at a time.

    drf-spectacular imports and patches settings while it generates; the first generations
    of a process, run at once in a threaded server, failed each other.
    """

    _generating = threading.Lock()

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Any:
        with self._generating:
            return super().get(request, *args, **kwargs)


@csrf_exempt
def api_not_found(request: HttpRequest, path: str) -> HttpResponse:
    """Any path under /api/ that no route matched, whatever the method: a 404 in the envelope."""
    return PathNotFound().response()


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def handle_bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    return BadRequest().response() if _is_api(request) else bad_request(request, exception)


def handle_server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 handler, called while the exception is being handled: a service's fault is a 503."""
    error = sys.exc_info()[1]
    if is_service_fault(error):
        assert error is not None
        return service_unavailable(request, error)
    return InternalError().response() if _is_api(request) else server_error(request)


def service_unavailable(request: HttpRequest, error: BaseException) -> HttpResponse:
    log_service_fault(error)
    if _is_api(request):
        response: HttpResponse = ServiceUnavailable().response()
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
