"""A batch of finished spans as the OTLP request the exporter sends: the same bytes as the OpenTelemetry exporter's own
encoder, for a fraction of its CPU (docs/observability.md, "What it costs").

The exporter's thread encodes every span a process makes, holding the GIL while it does, so its cost is taken from the
requests and the attempts. The stock encoder builds a protobuf message for every span and two for every attribute,
though most attributes repeat from span to span (``db.system``, a statement's text, a peer's name), and it hashes each
span's resource, which serialises the resource's attributes to JSON, to group the spans. Here a span's bytes are
written directly in the protobuf wire format (https://protobuf.dev/programming-guides/encoding/): the fields in
field-number order, as the protobuf runtime writes them, and a field left out where it holds its default (0, empty),
as proto3 leaves it. A scalar attribute's encoded field is kept and reused; the rare parts (events, links, a sequence
attribute, the resource and the scope, once a batch) are encoded by the SDK's own helpers and their bytes put in the
stream. Spans are grouped by their resource's and scope's identity (one provider, one resource).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.exporter.otlp.proto.common._internal import (
    _encode_instrumentation_scope,
    _encode_key_value,
    _encode_resource,
)
from opentelemetry.exporter.otlp.proto.common._internal.trace_encoder import _encode_events, _encode_links
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
from opentelemetry.proto.trace.v1.trace_pb2 import SpanFlags
from opentelemetry.proto.trace.v1.trace_pb2 import Status as StatusMessage
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

# Attributes kept encoded: a process's spans repeat a few hundred at most (the statements it runs, its peers); past
# this many the values vary (ids in an attribute) and the cache starts again rather than grow.
KEPT_ATTRIBUTES_MAX = 4096
KEPT_TYPES = frozenset({str, bool, int, float})
HASHED_TYPES = KEPT_TYPES - {float}  # kept under the value itself; a float under its exact bits (_attribute)
_kept_attributes: dict[tuple[str, type, Hashable], bytes] = {}
_kept_names: dict[str, bytes] = {}

# A field's tag is its number shifted left by three, or'ed with its wire type: 0 varint, 1 fixed64, 2 length-delimited,
# 5 fixed32 (trace.proto, trace_service.proto).
_REQUEST_RESOURCE_SPANS = 1 << 3 | 2
_RESOURCE_SPANS_RESOURCE, _RESOURCE_SPANS_SCOPE_SPANS, _RESOURCE_SPANS_SCHEMA_URL = (n << 3 | 2 for n in (1, 2, 3))
_SCOPE_SPANS_SCOPE, _SCOPE_SPANS_SPANS, _SCOPE_SPANS_SCHEMA_URL = (n << 3 | 2 for n in (1, 2, 3))
_TRACE_ID, _SPAN_ID, _TRACE_STATE, _PARENT_SPAN_ID, _NAME = (n << 3 | 2 for n in (1, 2, 3, 4, 5))
_KIND = 6 << 3
_START_TIME, _END_TIME = 7 << 3 | 1, 8 << 3 | 1
_ATTRIBUTES, _EVENTS, _LINKS, _STATUS = (n << 3 | 2 for n in (9, 11, 13, 15))
_DROPPED_ATTRIBUTES, _DROPPED_EVENTS, _DROPPED_LINKS = (n << 3 for n in (10, 12, 14))
_FLAGS = 16 << 3 | 5
_STATUS_MESSAGE, _STATUS_CODE = 2 << 3 | 2, 3 << 3

_ONE_BYTE_VARINTS = [bytes((value,)) for value in range(0x80)]
_KINDS = {kind: SpanMessage.SpanKind.Value(f"SPAN_KIND_{kind.name}") for kind in SpanKind}
_STATUS_CODES = {code: StatusMessage.StatusCode.Value(f"STATUS_CODE_{code.name}") for code in StatusCode}


def _varint(value: int) -> bytes:
    """``value`` (not negative) as a base-128 varint, low group first."""
    if value < 0x80:
        return _ONE_BYTE_VARINTS[value]
    groups = bytearray()
    while value >= 0x80:
        groups.append(value & 0x7F | 0x80)
        value >>= 7
    groups.append(value)
    return bytes(groups)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return _varint(tag) + _varint(len(payload)) + payload


def _flags_field(parent_is_remote: bool) -> bytes:
    flags: int = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
    if parent_is_remote:
        flags |= SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
    return _varint(_FLAGS) + flags.to_bytes(4, "little")


def _status_field(code: StatusCode, description: str | None) -> bytes:
    payload = b""
    if description:
        payload += _field(_STATUS_MESSAGE, description.encode())
    if _STATUS_CODES[code]:
        payload += _varint(_STATUS_CODE) + _varint(_STATUS_CODES[code])
    return _field(_STATUS, payload)


_SCOPE_SPANS_SPANS_TAG = _varint(_SCOPE_SPANS_SPANS)
_TRACE_ID_PREFIX = _varint(_TRACE_ID) + _varint(16)
_SPAN_ID_PREFIX = _varint(_SPAN_ID) + _varint(8)
_PARENT_SPAN_ID_PREFIX = _varint(_PARENT_SPAN_ID) + _varint(8)
_START_TIME_TAG, _END_TIME_TAG = _varint(_START_TIME), _varint(_END_TIME)
_LOCAL_PARENT_FLAGS, _REMOTE_PARENT_FLAGS = _flags_field(False), _flags_field(True)
# By the enum member's value: an enum member hashes in Python, its ``_value_`` is a plain attribute. Proto3 leaves out
# a kind of 0 (unspecified), which the SDK never gives.
_KIND_FIELDS_BY_VALUE = {
    kind._value_: _varint(_KIND) + _varint(value) if value else b"" for kind, value in _KINDS.items()
}
_STATUS_FIELDS_BY_VALUE = {code._value_: _status_field(code, None) for code in StatusCode}  # without a description


class EncodedRequest:
    """An ``ExportTraceServiceRequest`` already serialised: all the exporter asks of what ``encode_spans`` returns is
    ``SerializePartialToString()`` (``OTLPSpanExporter.export``)."""

    def __init__(self, resource_spans: list[bytes]) -> None:
        self.resource_spans = resource_spans  # each a ResourceSpans message's bytes

    def SerializeToString(self, deterministic: bool = False) -> bytes:
        """The request's bytes; they are deterministic either way (fields in number order, no map fields)."""
        return b"".join(_field(_REQUEST_RESOURCE_SPANS, resource_spans) for resource_spans in self.resource_spans)

    SerializePartialToString = SerializeToString  # every field is proto3, so none is required


# Off the framework's road: docs/departures.md, "otlp-encoding".
def encode_spans(sdk_spans: Sequence[ReadableSpan]) -> EncodedRequest:
    """What ``opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans`` returns for ``sdk_spans``, as its
    bytes."""
    groups: dict[tuple[int, int], tuple[Resource, InstrumentationScope | None, list[bytes]]] = {}
    for span in sdk_spans:
        resource, scope = span._resource, span._instrumentation_scope
        key = (id(resource), id(scope))
        if key not in groups:
            groups[key] = (resource, scope, [])
        encoded = _span_bytes(span)
        groups[key][2].append(_SCOPE_SPANS_SPANS_TAG + _varint(len(encoded)) + encoded)
    by_resource: dict[int, tuple[Resource, list[bytes]]] = {}
    for resource, scope, spans in groups.values():
        by_resource.setdefault(id(resource), (resource, []))[1].append(
            _field(_RESOURCE_SPANS_SCOPE_SPANS, _scope_spans_bytes(scope, spans))
        )
    return EncodedRequest([_resource_spans_bytes(resource, scopes) for resource, scopes in by_resource.values()])


def _resource_spans_bytes(resource: Resource, scope_spans: list[bytes]) -> bytes:
    encoded_resource = _field(_RESOURCE_SPANS_RESOURCE, _encode_resource(resource).SerializeToString())
    return encoded_resource + b"".join(scope_spans) + _string_field(_RESOURCE_SPANS_SCHEMA_URL, resource.schema_url)


def _scope_spans_bytes(scope: InstrumentationScope | None, spans: list[bytes]) -> bytes:
    # A span without a scope gets an empty scope message, as the SDK's encoder gives it.
    encoded_scope = _encode_instrumentation_scope(scope).SerializeToString()  # type: ignore[arg-type]
    schema_url = (scope.schema_url if scope else None) or ""
    return (
        _field(_SCOPE_SPANS_SCOPE, encoded_scope) + b"".join(spans) + _string_field(_SCOPE_SPANS_SCHEMA_URL, schema_url)
    )


def _span_bytes(span: ReadableSpan) -> bytes:
    """The span's message, its fields in number order (``flags``, 16, last) as the protobuf runtime writes them.

    The ended span's fields are read where the SDK keeps them, not through ``ReadableSpan``'s properties, which wrap
    the attributes in a mapping proxy read back key by key and copy the events and links into tuples: about half of
    what encoding a span cost. An ended span's attributes are immutable, so their dictionary is read as the SDK's own
    iteration reads it then."""
    context: SpanContext = span._context  # type: ignore[assignment]
    parent = span._parent
    attributes, dropped_attributes = _held(span._attributes)
    events, dropped_events = _held(span._events)
    links, dropped_links = _held(span._links)
    pieces = [
        _TRACE_ID_PREFIX,
        context.trace_id.to_bytes(16, "big"),
        _SPAN_ID_PREFIX,
        context.span_id.to_bytes(8, "big"),
    ]
    if context.trace_state:
        pieces.append(
            _string_field(_TRACE_STATE, ",".join(f"{key}={value}" for key, value in context.trace_state.items()))
        )
    if parent is not None:
        pieces += (_PARENT_SPAN_ID_PREFIX, parent.span_id.to_bytes(8, "big"))
    pieces.append(_kept_names.get(span._name) or _name_field(span._name))
    pieces.append(_KIND_FIELDS_BY_VALUE[span._kind._value_])
    if span._start_time:  # 0 is unset, as None is to the SDK's encoder
        pieces += (_START_TIME_TAG, span._start_time.to_bytes(8, "little"))
    if span._end_time:
        pieces += (_END_TIME_TAG, span._end_time.to_bytes(8, "little"))
    pieces += [
        _kept_attributes.get((key, type(value), value)) or _attribute(key, value)
        if type(value) in HASHED_TYPES
        else _attribute(key, value)
        for key, value in attributes.items()
    ]
    if dropped_attributes:
        pieces.append(_count_field(_DROPPED_ATTRIBUTES, dropped_attributes))
    if events:
        pieces += [_field(_EVENTS, event.SerializeToString()) for event in _encode_events(span.events) or []]
    if dropped_events:
        pieces.append(_count_field(_DROPPED_EVENTS, dropped_events))
    if links:
        pieces += [_field(_LINKS, link.SerializeToString()) for link in _encode_links(span.links) or []]
    if dropped_links:
        pieces.append(_count_field(_DROPPED_LINKS, dropped_links))
    pieces.append(_status(span._status))
    pieces.append(_REMOTE_PARENT_FLAGS if parent is not None and parent.is_remote else _LOCAL_PARENT_FLAGS)
    return b"".join(pieces)


def _held(bounded: Any) -> tuple[Any, int]:
    """What an SDK span's ``BoundedAttributes`` or ``BoundedList`` holds (its dict, its deque) and how many it
    dropped, as the SDK's ``dropped_*`` properties give it; a plain mapping or sequence as it is (a ``ReadableSpan``
    made directly), nothing for ``None``."""
    if type(bounded) is BoundedAttributes:
        return bounded._dict, bounded.dropped
    if type(bounded) is BoundedList:
        return bounded._dq, bounded.dropped  # type: ignore[attr-defined]
    return bounded or {}, 0


def _name_field(name: str) -> bytes:
    """A span's name field, kept for the next span of that name (a process's names are its routes, statements'
    first words, commands and tasks; past the bound they start again, as the kept attributes do)."""
    if len(_kept_names) >= KEPT_ATTRIBUTES_MAX:
        _kept_names.clear()
    encoded = _kept_names[name] = _string_field(_NAME, name)
    return encoded


def _string_field(tag: int, value: str) -> bytes:
    """A string field, left out when empty as proto3 leaves it."""
    return _field(tag, value.encode()) if value else b""


def _count_field(tag: int, count: int) -> bytes:
    """A uint32 field, left out when 0."""
    return _varint(tag) + _varint(count) if count else b""


def _attribute(key: str, value: Any) -> bytes:
    """The attribute's encoded field, kept for the next span that carries the same one if its value is a scalar (a
    value of another type that compares equal, ``True`` and ``1``, is another attribute: the type is part of the key;
    a sequence's items could differ so, and it is encoded each time)."""
    if type(value) not in KEPT_TYPES:
        return _field(_ATTRIBUTES, _encode_key_value(key, value).SerializeToString())
    # A float by its exact bits: 0.0 and -0.0 compare equal but encode apart, and NaN equals nothing.
    kept_key = (key, type(value), value.hex() if type(value) is float else value)
    if kept_key in _kept_attributes:
        return _kept_attributes[kept_key]
    if len(_kept_attributes) >= KEPT_ATTRIBUTES_MAX:
        _kept_attributes.clear()
    encoded = _kept_attributes[kept_key] = _field(_ATTRIBUTES, _encode_key_value(key, value).SerializeToString())
    return encoded


def _status(status: Status) -> bytes:
    if status.description is None:
        return _STATUS_FIELDS_BY_VALUE[status.status_code._value_]
    return _status_field(status.status_code, status.description)
