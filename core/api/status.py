"""The service's own endpoints, open to anyone: whether it is healthy, and what it is."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.exceptions import ApiError
from core.api.fields import OneOfField
from core.api.schema import ErrorAnswer, error_responses
from core.api.views import ApiView
from core.health import OK, STATUSES, health_check
from core.public_url import public_url

SERVICE_NAME = "NotifyHub"


class PublicView(ApiView):
    """No credential and no rate limit: load balancers, monitors and SDKs call these."""

    authentication_classes = []
    permission_classes = []
    throttle_classes = []


class Unhealthy(ApiError):
    """The health check: a part the service stands on does not answer; the message names each."""

    status = 503
    code = "unhealthy"

    def __init__(self, *, down: Sequence[str]) -> None:
        self.message = f"Service unavailable: {', '.join(down)}"
        super().__init__()


def _part_status() -> OneOfField:
    return OneOfField(choices=STATUSES)


class HealthView(PublicView):
    @extend_schema(
        summary="Health",
        description=(
            "`200` when the database and the job queue's broker both answer, `503` naming each part that does not. "
            "Every check gives up after 2 seconds. No authentication."
        ),
        auth=[],
        responses={
            200: inline_serializer(
                "Health",
                {"status": OneOfField(choices=[OK]), "database": _part_status(), "broker": _part_status()},
            ),
            **error_responses(
                503,
                descriptions={
                    503: ErrorAnswer(
                        "A part is down: the message names it (`Service unavailable: database`), and "
                        "`details` gives each part's status, `ok` or `down`.",
                        Unhealthy,
                    )
                },
            ),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        parts = health_check()
        down = [part for part, status in parts.items() if status != OK]
        if down:
            return Unhealthy(down=down).response(details=parts)
        return Response({"status": OK, **parts})


class InfoView(PublicView):
    @extend_schema(
        summary="About the service",
        description="The service's name, its version, and where its API reference is. No authentication.",
        auth=[],
        responses={
            200: inline_serializer(
                "Info",
                {"name": serializers.CharField(), "version": serializers.CharField(), "docs": serializers.URLField()},
            )
        },
    )
    def get(self, request: Request) -> Response:
        docs = public_url(reverse("api-docs"))
        return Response({"name": SERVICE_NAME, "version": settings.VERSION, "docs": docs})
