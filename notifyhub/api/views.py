from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request, server_error
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from notifyhub.api.auth import ApiKeyAuthentication, ApiKeyIfSentAuthentication
from notifyhub.api.envelope import error_response, iso_utc
from notifyhub.api.throttle import ApiKeyRateThrottle


class EnvelopeNegotiation(DefaultContentNegotiation):
    """Every API response is the JSON envelope, whatever the request's Accept header says.

    The API speaks one format, so there is nothing to choose: DRF's default matched the
    Accept header against the renderers on every request, 3% of a send's CPU, to answer
    406 where a JSON-only API (Stripe's, say) answers JSON. Request bodies are still
    matched to parsers by Content-Type (415).
    """

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class ApiView(APIView):
    content_negotiation_class = EnvelopeNegotiation


# Endpoints for API clients: key authentication, then the per-key rate limit.
class ApiKeyView(ApiView):
    authentication_classes = [ApiKeyAuthentication]
    throttle_classes = [ApiKeyRateThrottle]


# Endpoints for the account holder: the dashboard's session (with CSRF) or an API key.
class AccountHolderView(ApiView):
    authentication_classes = [ApiKeyIfSentAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ApiKeyRateThrottle]


class PingView(ApiKeyView):
    @extend_schema(
        summary="Check an API key",
        responses={
            200: inline_serializer("Pong", {"message": serializers.CharField(), "timestamp": serializers.CharField()})
        },
    )
    def get(self, request: Request) -> Response:
        return Response({"message": "pong", "timestamp": iso_utc(datetime.now(UTC))})


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
