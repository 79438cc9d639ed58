"""What every API endpoint shares: one response format, and envelope errors outside DRF."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request, server_error
from rest_framework.exceptions import APIException
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from core.api.envelope import error_response


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


class LengthRequired(APIException):
    status_code = 411
    default_detail = "Send the request body with a Content-Length header, not chunked"


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


@csrf_exempt
def api_not_found(request: HttpRequest, path: str) -> HttpResponse:
    """Any path under /api/ that no route matched, whatever the method: a 404 in the envelope."""
    return error_response(404, "Not found")


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def handle_bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    return error_response(400, "Bad request") if _is_api(request) else bad_request(request, exception)


def handle_server_error(request: HttpRequest) -> HttpResponse:
    return error_response(500, "Internal server error") if _is_api(request) else server_error(request)
