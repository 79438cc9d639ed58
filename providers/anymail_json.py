"""anymail's backends for the providers, their JSON request body sent as it is written (docs/departures.md,
"streamed-request-json").

anymail serializes a message with ``json.dumps`` into one str, which urllib3 then encodes to bytes, and puts each
attachment in it as base64 made whole beforehand: with a 10 MiB attachment, its 13.3 MiB of base64 as bytes, then
as a str, then escaped, joined into the document and encoded again, beside the file itself, which failover keeps
for the next provider. Here each attachment's base64 is made as the body is sent, a slice at a time, from the
file; the document is written with each long string left out, and the body streams those in slices, each escaped
and encoded as json.dumps would: the same bytes, under a Content-Length, without the copies.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

from anymail.backends import postmark, resend, sendgrid

# A string at least this long goes to the body in slices; a message without one is serialized as anymail does.
LONG_STRING = 64 * 1024
SLICE = 64 * 1024
# The file's bytes a slice of its base64 holds: a multiple of 3, so that the slices' base64 joined is the whole's.
BASE64_SLICE = SLICE // 4 * 3


class LongValue(Protocol):
    """A value the body writes in slices: the JSON of it between its quotes, ``length`` bytes in all."""

    def length(self) -> int: ...

    def slices(self) -> Iterator[bytes]: ...


class EscapedText:
    """A long str, escaped as json.dumps writes it. json escapes each code point alone, so the slices' escapes
    joined are the whole string's."""

    def __init__(self, text: str) -> None:
        self.text = text

    def length(self) -> int:
        return sum(len(chunk) for chunk in self.slices())

    def slices(self) -> Iterator[bytes]:
        for start in range(0, len(self.text), SLICE):
            yield json.dumps(self.text[start : start + SLICE])[1:-1].encode()


class Base64Text:
    """An attachment's base64, made from its bytes as it is written, never held whole. Standard base64 (A-Z, a-z,
    0-9, +, / and =) has nothing json escapes."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    def __len__(self) -> int:
        return -(-len(self.content) // 3) * 4

    def __str__(self) -> str:
        return base64.b64encode(self.content).decode("ascii")

    def length(self) -> int:
        return len(self)

    def slices(self) -> Iterator[bytes]:
        view = memoryview(self.content)
        for start in range(0, len(view), BASE64_SLICE):
            yield base64.b64encode(view[start : start + BASE64_SLICE])


class StreamedJsonBody:
    """A JSON document as requests sends an iterable body: its bytes slice by slice, ``len`` its Content-Length.
    Each iteration starts over, so a request sent again sends it whole."""

    def __init__(self, pieces: list[str], long_values: list[LongValue]) -> None:
        # pieces[n] is the document before long_values[n] (whose quotes it holds), pieces[-1] the rest.
        self._pieces = pieces
        self._long_values = long_values
        self._length = sum(len(piece.encode()) for piece in pieces) + sum(value.length() for value in long_values)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes]:
        for piece, value in zip(self._pieces, self._long_values, strict=False):
            yield piece.encode()
            yield from value.slices()
        yield self._pieces[-1].encode()


def _without_long_values(data: Any, marker: str, long_values: list[LongValue]) -> Any:
    """``data`` with each string of LONG_STRING or more characters, or base64 that long, replaced by ``marker`` and
    its number, the value appended to ``long_values``; a shorter base64 made a str; dicts and lists copied, the
    payload's own left as it is."""
    if isinstance(data, str | Base64Text) and len(data) >= LONG_STRING:
        long_values.append(data if isinstance(data, Base64Text) else EscapedText(data))
        return f"{marker}{len(long_values) - 1}"
    if isinstance(data, Base64Text):
        return str(data)
    if isinstance(data, dict):
        return {key: _without_long_values(value, marker, long_values) for key, value in data.items()}
    if isinstance(data, list):
        return [_without_long_values(value, marker, long_values) for value in data]
    return data


class StreamedAttachment:
    """An anymail attachment whose base64 is a :class:`Base64Text`, for the payload to write as it streams."""

    def __init__(self, attachment: Any) -> None:
        self._attachment = attachment

    def __getattr__(self, name: str) -> Any:
        return getattr(self._attachment, name)

    @property
    def b64content(self) -> Base64Text:
        return Base64Text(self._attachment.content_bytes)

    @property
    def b64content_utf8(self) -> Base64Text:
        return Base64Text(self._attachment.content_utf8_bytes)


class StreamedJsonPayload:
    """Mixed in before an anymail payload class: its attachments' base64 left to the body, and its
    ``serialize_json``, which each backend's ``serialize_data`` ends with, giving a :class:`StreamedJsonBody` when
    the data holds a long value."""

    def set_attachments(self, attachments: list[Any]) -> None:
        super().set_attachments([StreamedAttachment(attachment) for attachment in attachments])  # type: ignore[misc]

    def serialize_json(self, data: Any) -> Any:
        long_values: list[LongValue] = []
        marker = f"anymail-json-{uuid.uuid4()}-"
        text = super().serialize_json(_without_long_values(data, marker, long_values))  # type: ignore[misc]
        if not long_values:
            return text
        pieces, rest = [], text
        for number in range(len(long_values)):
            before, rest = rest.split(f"{marker}{number}", 1)
            pieces.append(before)
        return StreamedJsonBody([*pieces, rest], long_values)


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
