from __future__ import annotations

from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request, server_error
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from notifyhub.api.auth import ApiKeyAuthentication, ApiKeyIfSentAuthentication
from notifyhub.api.envelope import error_response, iso_utc
from notifyhub.api.throttle import ApiKeyRateThrottle


# Endpoints for API clients: key authentication, then the per-key rate limit.
class ApiKeyView(APIView):
    authentication_classes = [ApiKeyAuthentication]
    throttle_classes = [ApiKeyRateThrottle]


# Endpoints for the account holder: the dashboard's session (with CSRF) or an API key.
class AccountHolderView(APIView):
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
