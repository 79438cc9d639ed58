"""The endpoint that checks a key."""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ApiKeyView
from core.api.envelope import iso_utc


class PingView(ApiKeyView):
    @extend_schema(
        summary="Check an API key",
        responses={
            200: inline_serializer("Pong", {"message": serializers.CharField(), "timestamp": serializers.CharField()})
        },
    )
    def get(self, request: Request) -> Response:
        return Response({"message": "pong", "timestamp": iso_utc(datetime.now(UTC))})
