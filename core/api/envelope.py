"""The response envelope every API answer has: ``success``, ``data`` or ``error``, ``timestamp``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.http import JsonResponse
from rest_framework.renderers import JSONRenderer

from core.errors import CodedError


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a ``Z``, e.g. ``2026-11-21T10:04:05.123Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_utc_or_none(moment: datetime | None) -> str | None:
    return iso_utc(moment) if moment else None


def success_body(data: Any) -> dict[str, Any]:
    return {"success": True, "data": data, "timestamp": iso_utc(datetime.now(UTC))}


def error_body(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``code`` names the condition for programs, ``message`` says it to people (docs/errors.md); ``details``,
    when given, says more than the message for a program to read (the health check's parts)."""
    body: dict[str, Any] = {"success": False, "error": message, "code": code}
    if details is not None:
        body["details"] = details
    return {**body, "timestamp": iso_utc(datetime.now(UTC))}


def error_response(status: int, error: CodedError, *, details: Mapping[str, Any] | None = None) -> JsonResponse:
    """An envelope error rendered at once: for code paths outside DRF (Django's error handlers), and for
    an error with ``details``, which DRF's renderer would drop."""
    return _envelope_response(error_body(error.code, error.message, details), status)


def success_response(data: Any, status: int = 200) -> JsonResponse:
    """An envelope success from a plain Django view (the provider-event receivers); DRF views return a
    ``Response``, which EnvelopeRenderer wraps."""
    return _envelope_response(success_body(data), status)


def _envelope_response(body: dict[str, Any], status: int) -> JsonResponse:
    return JsonResponse(body, status=status, json_dumps_params={"separators": (",", ":")})


class EnvelopeRenderer(JSONRenderer):
    """Wraps every API response body; errors arrive from the exception handler as ``{"error": ..., "code": ...}``."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        response = (renderer_context or {}).get("response")
        failed = response is not None and response.status_code >= 400
        body = error_body(data["code"], data["error"]) if failed else success_body(data)
        return super().render(body, accepted_media_type, renderer_context)
