"""The API's one body format: a JSON object, checked so that whatever is stored can be sent and read back."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import BaseParser

from core.api.exceptions import ApiError, PayloadTooLarge

# Deeper documents are refused at the door: Python's JSON encoder and decoder recurse, so a
# body nested near the interpreter's limit would parse here and fail wherever it is encoded.
MAX_NESTING = 64
# An escaped UTF-16 surrogate; only a body with one can decode to a string UTF-8 cannot encode.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class InvalidJson(ApiError):
    status = 400
    code = "invalid_json"
    message = "Request body must be valid JSON"


class BodyNotObject(ApiError):
    status = 400
    code = "body_not_object"
    message = "Request body must be a JSON object"


class BodyTooDeep(ApiError):
    status = 400
    code = "body_too_deep"
    message = f"Request body must not be nested more than {MAX_NESTING} levels deep"


class NumberOutOfRange(ApiError):
    """A number too large for a float: it would be stored as infinity, which JSON cannot say."""

    status = 400
    code = "number_out_of_range"

    def __init__(self, *, number: str) -> None:
        self.message = f"Request body has a number out of range: {number[:40]}"
        super().__init__()


class InvalidUnicode(ApiError):
    status = 400
    code = "invalid_unicode"

    def __init__(self, *, field: str) -> None:
        self.message = f"{field} must be valid Unicode text (it holds an unpaired surrogate)"
        super().__init__()


# Every way the parser refuses a body, for the operations that take one (their OpenAPI answers).
PARSER_REFUSALS = (InvalidJson, BodyNotObject, BodyTooDeep, NumberOutOfRange, InvalidUnicode)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NumberOutOfRange(number=text)
    return value


class JSONObjectParser(BaseParser):
    """Parses a JSON object body; anything else is a 4xx with a message, never a 500.

    DRF reads the request stream directly, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    check, so the size cap is enforced here while reading: API_MAX_BODY_BYTES, or the view's
    ``max_body_bytes`` (a batch's).
    """

    media_type = "application/json"

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        view = (parser_context or {}).get("view")
        limit = getattr(view, "max_body_bytes", settings.API_MAX_BODY_BYTES)
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise PayloadTooLarge(limit_bytes=limit)
        data = _decode(raw)
        if not isinstance(data, dict):
            raise BodyNotObject()
        # Counting brackets is cheap; only a body with many of them needs its depth measured.
        if raw.count(b"[") + raw.count(b"{") > MAX_NESTING and _depth(data) > MAX_NESTING:
            raise BodyTooDeep()
        if SURROGATE_ESCAPE.search(raw):
            _reject_unpaired_surrogates(data)
        return data


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise BodyTooDeep() from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidJson() from None


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
                raise InvalidUnicode(field=name) from None
