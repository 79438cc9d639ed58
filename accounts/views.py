"""The endpoint that checks a key."""

from __future__ import annotations

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ApiKeyView
from core.api.envelope import iso_utc
from core.api.schema import error_responses


class PingView(ApiKeyView):
    @extend_schema(
        summary="Check an API key",
        description="Answers `pong` when the API key is valid and its account active.",
        responses={
            200: inline_serializer(
                "Pong", {"message": serializers.CharField(), "timestamp": serializers.DateTimeField()}
            ),
            **error_responses(400, 401, 403, 429),
        },
    )
    def get(self, request: Request) -> Response:
        return Response({"message": "pong", "timestamp": iso_utc(datetime.now(UTC))})
