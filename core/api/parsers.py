"""The API's one body format: a JSON object, checked so that whatever is stored can be sent and read back."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from core.api.exceptions import PayloadTooLarge

# Deeper documents are refused at the door: Python's JSON encoder and decoder recurse, so a
# body nested near the interpreter's limit would parse here and fail wherever it is encoded.
MAX_NESTING = 64
# An escaped UTF-16 surrogate; only a body with one can decode to a string UTF-8 cannot encode.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class NumberOutOfRange(ValueError):
    pass


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NumberOutOfRange(text)
    return value


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
        data = _decode(raw)
        if not isinstance(data, dict):
            raise ParseError("Request body must be a JSON object")
        # Counting brackets is cheap; only a body with many of them needs its depth measured.
        if raw.count(b"[") + raw.count(b"{") > MAX_NESTING and _depth(data) > MAX_NESTING:
            raise ParseError(f"Request body must not be nested more than {MAX_NESTING} levels deep")
        if SURROGATE_ESCAPE.search(raw):
            _reject_unpaired_surrogates(data)
        return data


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except NumberOutOfRange as error:
        raise ParseError(f"Request body has a number out of range: {str(error)[:40]}") from None
    except RecursionError:
        raise ParseError(f"Request body must not be nested more than {MAX_NESTING} levels deep") from None
    except (ValueError, UnicodeDecodeError):
        raise ParseError("Request body must be valid JSON") from None


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    return list(value) if isinstance(value, list) else []


def _depth(data: Any) -> int:
    """How deeply arrays and objects nest in ``data``, walked without recursion."""
    deepest, level = 0, [data]
    while level:
        deepest += 1
        level = [child for node in level for child in _children(node) if isinstance(child, dict | list)]
    return deepest


def _strings(value: Any) -> Iterator[str]:
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            yield current
        else:
            pending.extend(_children(current))


def _reject_unpaired_surrogates(data: dict[str, Any]) -> None:
    """An escaped surrogate without its pair cannot become UTF-8: name the field that holds one."""
    for name, value in data.items():
        for text in _strings([name, value]):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise ParseError(f"{name} must be valid Unicode text (it holds an unpaired surrogate)") from None
