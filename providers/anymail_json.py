"""anymail's backends for the providers, their JSON request body sent as it is written (docs/departures.md,
"streamed-request-json").

anymail serializes a message with ``json.dumps`` into one str, which urllib3 then encodes to bytes: with a 10 MiB
attachment, three copies of its 13.3 MiB of base64 (json's escaped chunk, the document, its bytes) beside the
payload's own, while the file is still held for the failover. Here the document is written with each long string
left out, and the body streams those strings from the payload in slices, each escaped and encoded as json.dumps
would: the same bytes, under a Content-Length, without the copies.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from anymail.backends import postmark, resend, sendgrid

# A string at least this long goes to the body in slices; a message without one is serialized as anymail does.
LONG_STRING = 64 * 1024
SLICE = 64 * 1024


class StreamedJsonBody:
    """A JSON document as requests sends an iterable body: its bytes slice by slice, ``len`` its Content-Length.
    Each iteration starts over, so a request sent again sends it whole."""

    def __init__(self, pieces: list[str], long_strings: list[str]) -> None:
        # pieces[n] is the document before long_strings[n] (whose quotes it holds), pieces[-1] the rest.
        self._pieces = pieces
        self._long_strings = long_strings
        self._length = sum(len(piece.encode()) for piece in pieces) + sum(
            len(chunk) for text in long_strings for chunk in _escaped(text)
        )

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes]:
        for piece, text in zip(self._pieces, self._long_strings, strict=False):
            yield piece.encode()
            yield from _escaped(text)
        yield self._pieces[-1].encode()


def _escaped(text: str) -> Iterator[bytes]:
    """``text`` as json.dumps writes it inside its quotes, a slice at a time. json escapes each code point alone,
    so the slices' escapes joined are the whole string's."""
    for start in range(0, len(text), SLICE):
        yield json.dumps(text[start : start + SLICE])[1:-1].encode()


def _without_long_strings(data: Any, marker: str, long_strings: list[str]) -> Any:
    """``data`` with each string of LONG_STRING or more characters replaced by ``marker`` and its number, the string
    appended to ``long_strings``; dicts and lists copied, the payload's own left as it is."""
    if isinstance(data, str) and len(data) >= LONG_STRING:
        long_strings.append(data)
        return f"{marker}{len(long_strings) - 1}"
    if isinstance(data, dict):
        return {key: _without_long_strings(value, marker, long_strings) for key, value in data.items()}
    if isinstance(data, list):
        return [_without_long_strings(value, marker, long_strings) for value in data]
    return data


class StreamedJsonPayload:
    """Mixed in before an anymail payload class: its ``serialize_json``, which each backend's ``serialize_data``
    ends with, gives a :class:`StreamedJsonBody` when the data holds a long string."""

    def serialize_json(self, data: Any) -> Any:
        long_strings: list[str] = []
        marker = f"anymail-json-{uuid.uuid4()}-"
        text = super().serialize_json(_without_long_strings(data, marker, long_strings))  # type: ignore[misc]
        if not long_strings:
            return text
        pieces, rest = [], text
        for number in range(len(long_strings)):
            before, rest = rest.split(f"{marker}{number}", 1)
            pieces.append(before)
        return StreamedJsonBody([*pieces, rest], long_strings)


class SendGridPayload(StreamedJsonPayload, sendgrid.SendGridPayload):
    pass


class PostmarkPayload(StreamedJsonPayload, postmark.PostmarkPayload):
    pass


class ResendPayload(StreamedJsonPayload, resend.ResendPayload):
    pass


# Off the framework's road: docs/departures.md, "streamed-request-json".
class SendGridBackend(sendgrid.EmailBackend):
    def build_message_payload(self, message: Any, defaults: Any) -> SendGridPayload:
        return SendGridPayload(message, defaults, self)


class PostmarkBackend(postmark.EmailBackend):
    def build_message_payload(self, message: Any, defaults: Any) -> PostmarkPayload:
        return PostmarkPayload(message, defaults, self)


class ResendBackend(resend.EmailBackend):
    def build_message_payload(self, message: Any, defaults: Any) -> ResendPayload:
        return ResendPayload(message, defaults, self)
