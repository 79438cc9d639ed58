"""A batch of finished spans as the OTLP request the exporter sends: the same bytes as the OpenTelemetry exporter's own
encoder, for about 40% of its CPU (docs/observability.md, "What it costs").

The exporter's thread encodes every span a process makes, holding the GIL while it does, so its cost is taken from the
requests and the attempts. Two things make the stock encoder slow for our spans: it builds two protobuf messages for
every attribute, though most attributes repeat from span to span (``db.system``, a statement's text, a peer's name),
and it hashes each span's resource, which serialises the resource's attributes to JSON, to group the spans. Here an
attribute's encoded message is kept and reused (the message is copied into the span's, so a kept one is never
changed), spans are grouped by their resource's and scope's identity (one provider, one resource), and a span's
fields that are empty are left unset, as the protobuf runtime leaves them when given ``None``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common._internal import (
    _encode_instrumentation_scope,
    _encode_key_value,
    _encode_resource,
)
from opentelemetry.exporter.otlp.proto.common._internal.trace_encoder import _encode_events, _encode_links
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, SpanFlags
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
from opentelemetry.proto.trace.v1.trace_pb2 import Status as StatusMessage
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, StatusCode

# Attributes kept encoded: a process's spans repeat a few hundred at most (the statements it runs, its peers); past
# this many the values vary (ids in an attribute) and the cache starts again rather than grow.
KEPT_ATTRIBUTES_MAX = 4096

_KINDS = {kind: SpanMessage.SpanKind.Value(f"SPAN_KIND_{kind.name}") for kind in SpanKind}
_STATUS_CODES = {code: StatusMessage.StatusCode.Value(f"STATUS_CODE_{code.name}") for code in StatusCode}
_STATUSES = {code: StatusMessage(code=_STATUS_CODES[code]) for code in StatusCode}  # a status without a description
KEPT_TYPES = frozenset({str, bool, int, float})
_kept_attributes: dict[tuple[str, type, Hashable], KeyValue] = {}


# Off the framework's road: docs/departures.md, "otlp-encoding".
def encode_spans(sdk_spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """What ``opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans`` returns for ``sdk_spans``."""
    groups: dict[tuple[int, int], tuple[Resource, InstrumentationScope | None, list[SpanMessage]]] = {}
    for span in sdk_spans:
        key = (id(span.resource), id(span.instrumentation_scope))
        if key not in groups:
            groups[key] = (span.resource, span.instrumentation_scope, [])
        groups[key][2].append(_span_message(span))
    by_resource: dict[int, ResourceSpans] = {}
    for resource, scope, messages in groups.values():
        if id(resource) not in by_resource:
            encoded_resource = _encode_resource(resource)
            by_resource[id(resource)] = ResourceSpans(resource=encoded_resource, schema_url=resource.schema_url)
        by_resource[id(resource)].scope_spans.append(
            ScopeSpans(
                # A span without a scope gets an empty scope message, as the SDK's encoder gives it.
                scope=_encode_instrumentation_scope(scope),  # type: ignore[arg-type]
                spans=messages,
                schema_url=(scope.schema_url if scope else None) or "",
            )
        )
    return ExportTraceServiceRequest(resource_spans=list(by_resource.values()))


def _span_message(span: ReadableSpan) -> SpanMessage:
    context: SpanContext = span.context
    message = SpanMessage(
        trace_id=context.trace_id.to_bytes(16, "big"),
        span_id=context.span_id.to_bytes(8, "big"),
        name=span.name,
        kind=_KINDS[span.kind],
        start_time_unix_nano=span.start_time or 0,  # 0 is unset, as None is to the SDK's encoder
        end_time_unix_nano=span.end_time or 0,
        attributes=[_attribute(key, value) for key, value in (span.attributes or {}).items()],
        status=_status(span),
        flags=_flags(span.parent),
    )
    if span.parent:
        message.parent_span_id = span.parent.span_id.to_bytes(8, "big")
    if context.trace_state:
        message.trace_state = ",".join(f"{key}={value}" for key, value in context.trace_state.items())
    if span.events:
        message.events.extend(_encode_events(span.events) or [])
    if span.links:
        message.links.extend(_encode_links(span.links) or [])
    message.dropped_attributes_count = span.dropped_attributes
    message.dropped_events_count = span.dropped_events
    message.dropped_links_count = span.dropped_links
    return message


def _attribute(key: str, value: Any) -> KeyValue:
    """The attribute's message, kept for the next span that carries the same one if its value is a scalar (a value of
    another type that compares equal, ``True`` and ``1``, is another attribute: the type is part of the key; a
    sequence's items could differ so, and it is encoded each time)."""
    if type(value) not in KEPT_TYPES:
        return _encode_key_value(key, value)
    kept_key = (key, type(value), value)
    if kept_key in _kept_attributes:
        return _kept_attributes[kept_key]
    if len(_kept_attributes) >= KEPT_ATTRIBUTES_MAX:
        _kept_attributes.clear()
    encoded = _kept_attributes[kept_key] = _encode_key_value(key, value)
    return encoded


def _status(span: ReadableSpan) -> StatusMessage:
    status = span.status
    if status.description is None:
        return _STATUSES[status.status_code]
    return StatusMessage(code=_STATUS_CODES[status.status_code], message=status.description)


def _flags(parent: SpanContext | None) -> int:
    flags: int = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
    if parent is not None and parent.is_remote:
        flags |= SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
    return flags
