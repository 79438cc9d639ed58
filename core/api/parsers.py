"""The API's one body format: a JSON object, checked so that whatever is stored can be sent and read back."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import BaseParser

from core.api.exceptions import ApiError, PayloadTooLarge

# Deeper documents are refused at the door: Python's JSON encoder and decoder recurse, so a
# body nested near the interpreter's limit would parse here and fail wherever it is encoded.
MAX_NESTING = 64
# An escaped UTF-16 surrogate; only a body with one can decode to a string UTF-8 cannot encode.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
        text = _body_text(stream, getattr(view, "max_body_bytes", settings.API_MAX_BODY_BYTES))
        capped: ListCap | None = getattr(view, "list_cap", None)
        data = _decode(text) if capped is None else _decode_capped(text, capped)
        if not isinstance(data, dict):
            raise BodyNotObject()
        # Counting brackets is cheap; only a body with many of them needs its depth measured.
        if text.count("[") + text.count("{") > MAX_NESTING and _depth(data) > MAX_NESTING:
            raise BodyTooDeep()
        if SURROGATE_ESCAPE.search(text):
            _reject_unpaired_surrogates(data)
        return data


def _body_text(stream: IO[bytes], limit: int) -> str:
    """The body, read no further than ``limit`` bytes, as text. Its bytes are dropped on return, before the text is
    decoded: a large body (an email's attachments) then costs its text and its value, not its bytes as well."""
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLarge(limit_bytes=limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidJson() from None


# JSON as every body is read, whole (_decode) or an entry at a time (_decode_capped): no NaN or Infinity, no number
# past a float's range. One decoder for the process, where json.loads with these hooks would build one per body.
_JSON = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _decode(text: str) -> Any:
    try:
        return _JSON.decode(text)
    except RecursionError:
        raise BodyTooDeep() from None
    except ValueError:
        raise InvalidJson() from None


@dataclass(frozen=True)
class ListCap:
    """A view's list field (a batch's ``items``) that the parser reads one entry at a time: decoding costs by the
    values a body holds, not by its bytes (5 MB of ``[]`` is 1.7 million lists), so a list is read no further than
    its ``max_entries`` + 1st entry, which is enough for the view to refuse it, and an entry, like any other field of
    the body, may be no longer than ``max_entry_chars``. What the entries are the view checks as ever."""

    field: str
    max_entries: int
    # An entry or field spanning more characters than this is refused as too large (413) before it is decoded whole.
    max_entry_chars: int


_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _CutShort(Exception):
    """A value did not end within its cap: ``subject`` says which, for the refusal's message."""

    def __init__(self, subject: str) -> None:
        super().__init__(subject)
        self.subject = subject


# Off the framework's road: docs/departures.md, "capped-batch-items".
def _decode_capped(text: str, cap: ListCap) -> Any:
    """The body, decoded as :func:`_decode` would, but ``cap.field``'s list only as far as ``cap`` lets it go; a
    body that opens as a list is not an object, and is not read further. A body no longer than an entry may be is
    decoded whole, at json.loads' own speed: it costs no more than that entry would."""
    if len(text) <= cap.max_entry_chars:
        return _decode(text)
    start = _after_whitespace(text, 0)
    if text.startswith("[", start):
        raise BodyNotObject()
    if not text.startswith("{", start):
        return _decode(text)
    try:
        return _capped_object(text, start, cap)
    except _CutShort as cut:
        raise PayloadTooLarge(limit_bytes=cap.max_entry_chars, subject=cut.subject) from None
    except RecursionError:
        raise BodyTooDeep() from None
    except ValueError:
        raise InvalidJson() from None


def _after_whitespace(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]  # it matches the empty string


def _capped_object(text: str, index: int, cap: ListCap) -> dict[str, Any]:
    """The object opening at ``index``; raises ValueError where it is not JSON, as json.loads would."""
    members: dict[str, Any] = {}
    index = _after_whitespace(text, index + 1)
    closed = text.startswith("}", index)
    while not closed:
        if not text.startswith('"', index):
            raise ValueError("Expecting a property name")
        name, index = json.decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
        index = _after_whitespace(text, index)
        if not text.startswith(":", index):
            raise ValueError("Expecting ':'")
        index = _after_whitespace(text, index + 1)
        if name == cap.field and text.startswith("[", index):
            members[name], index = _capped_list(text, index, cap)
            if index < 0:
                return members  # the view refuses a list this long: the rest is never read
        else:
            members[name], index = _capped_value(text, index, cap.max_entry_chars, subject="Each field")
        index = _after_whitespace(text, index)
        closed = text.startswith("}", index)
        if not closed:
            if not text.startswith(",", index):
                raise ValueError("Expecting ',' or '}'")
            index = _after_whitespace(text, index + 1)
    if _after_whitespace(text, index + 1) != len(text):
        raise ValueError("Extra data")
    return members


def _capped_list(text: str, index: int, cap: ListCap) -> tuple[list[Any], int]:
    """The list opening at ``index`` and the index after it; -1 for the index once ``cap.max_entries`` + 1 entries
    are read, where reading stops."""
    entries: list[Any] = []
    index = _after_whitespace(text, index + 1)
    if text.startswith("]", index):
        return entries, index + 1
    while len(entries) <= cap.max_entries:
        entry, index = _capped_value(text, index, cap.max_entry_chars, subject="Each item")
        entries.append(entry)
        index = _after_whitespace(text, index)
        if text.startswith("]", index):
            return entries, index + 1
        if not text.startswith(",", index):
            raise ValueError("Expecting ',' or ']'")
        index = _after_whitespace(text, index + 1)
    return entries, -1


def _capped_value(text: str, index: int, max_chars: int, *, subject: str) -> tuple[Any, int]:
    """The value at ``index`` and the index after it, decoded from at most ``max_chars`` characters of the text."""
    if index + max_chars >= len(text):
        return _JSON.raw_decode(text, index)
    window = text[index : index + max_chars]
    try:
        entry, length = _JSON.raw_decode(window)
    except json.JSONDecodeError as error:
        if _at_the_cut(error, len(window)):
            raise _CutShort(subject) from None
        raise
    return entry, index + length


def _at_the_cut(error: json.JSONDecodeError, length: int) -> bool:
    """Whether decoding failed for want of what lies past the window's end: in a string still open there, or at a
    token (a number, ``false``, an escape) cut there."""
    return error.msg.startswith("Unterminated string") or error.pos >= length - len("\\uXXXX")


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
