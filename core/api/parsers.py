from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from core.api.exceptions import PayloadTooLarge


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


class JSONObjectParser(BaseParser):
    """Parses a JSON object body; anything else is a 4xx with a message, never a 500.

    DRF reads the request stream directly, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    check, so the size cap is enforced here while reading.
    """

    media_type = "application/json"

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        limit = settings.API_MAX_BODY_BYTES
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise PayloadTooLarge(f"Request body must be at most {limit // 1024} KB")
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError):
            raise ParseError("Request body must be valid JSON") from None
        if not isinstance(data, dict):
            raise ParseError("Request body must be a JSON object")
        return data
