"""OpenAPI: show the envelope every response really has."""

from __future__ import annotations

from typing import Any

TIMESTAMP = {"type": "string", "format": "date-time", "example": "2026-11-21T10:04:05.123Z"}
ERROR_ENVELOPE = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean", "enum": [False]},
        "error": {"type": "string"},
        "timestamp": TIMESTAMP,
    },
    "required": ["success", "error", "timestamp"],
}


def _success_envelope(data_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"success": {"type": "boolean", "enum": [True]}, "data": data_schema, "timestamp": TIMESTAMP},
        "required": ["success", "data", "timestamp"],
    }


def wrap_responses_in_envelope(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: wrap each JSON response schema in the envelope."""
    result.setdefault("components", {}).setdefault("schemas", {})["ErrorEnvelope"] = ERROR_ENVELOPE
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                content = response.setdefault("content", {})
                media = content.setdefault("application/json", {})
                if str(code).startswith("2"):
                    media["schema"] = _success_envelope(media.get("schema", {"type": "object"}))
                else:
                    media["schema"] = {"$ref": "#/components/schemas/ErrorEnvelope"}
    return result
