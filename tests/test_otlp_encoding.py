"""core/otlp_encoding.py: a batch encodes to the very bytes the OpenTelemetry exporter's own encoder makes, for spans
of every shape NotifyHub's make (docs/observability.md, "What it costs")."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as stock_encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

from core import otlp_encoding

REMOTE_PARENT = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0xB7AD6B7169203331,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
    trace_state=TraceState([("vendor", "value")]),
)


@pytest.fixture
def finished() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "notifyhub", "deployment.environment": "test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _spans_of_every_shape(provider)
    yield exporter
    provider.shutdown()


def _spans_of_every_shape(provider: TracerProvider) -> None:
    django = provider.get_tracer("opentelemetry.instrumentation.django", "0.66b1", schema_url="https://x/1.11.0")
    psycopg = provider.get_tracer("opentelemetry.instrumentation.psycopg")
    ours = provider.get_tracer("notifyhub")
    with django.start_as_current_span(
        "POST api/v1/notifications/webhook",
        context=_remote_parent(),
        kind=SpanKind.SERVER,
        attributes={"http.method": "POST", "http.status_code": 202, "http.route": "api/v1/notifications/webhook"},
    ):
        for _ in range(3):  # the same attributes again: kept ones are reused
            with psycopg.start_as_current_span(
                "SELECT", kind=SpanKind.CLIENT, attributes={"db.system": "postgresql", "db.statement": "SELECT 1"}
            ):
                pass
        # Values that compare equal across types, and sequences of them: each keeps its own type.
        with ours.start_as_current_span("flags", attributes={"a": True, "b": 1, "c": 1.0, "d": (True, False)}):
            pass
        with ours.start_as_current_span("flags", attributes={"a": 1, "b": True, "c": 1, "d": (1, 0), "e": ("x",)}):
            pass
    with ours.start_as_current_span("linked, failed", links=[Link(REMOTE_PARENT, {"why": "retry"})]) as failed:
        failed.add_event("exception", {"exception.type": "ConnectionError"})
        failed.set_status(Status(StatusCode.ERROR, "refused"))
    with ours.start_as_current_span("unset status, no attributes"):
        pass


def _remote_parent() -> Context:
    return trace.set_span_in_context(NonRecordingSpan(REMOTE_PARENT))


def test_a_batch_is_the_stock_encoder_s_bytes(finished: InMemorySpanExporter) -> None:
    spans: list[ReadableSpan] = list(finished.get_finished_spans())
    assert len(spans) == 8

    ours = otlp_encoding.encode_spans(spans).SerializeToString(deterministic=True)

    assert ours == stock_encode_spans(spans).SerializeToString(deterministic=True)
    # Again, with every scalar attribute now kept from the first batch.
    assert otlp_encoding.encode_spans(spans).SerializeToString(deterministic=True) == ours


def test_spans_of_two_resources_stay_apart(finished: InMemorySpanExporter) -> None:
    other = TracerProvider(resource=Resource({"service.name": "other"}))
    exporter = InMemorySpanExporter()
    other.add_span_processor(SimpleSpanProcessor(exporter))
    with other.get_tracer("notifyhub").start_as_current_span("elsewhere"):
        pass
    spans = [*finished.get_finished_spans(), *exporter.get_finished_spans()]

    encoded = otlp_encoding.encode_spans(spans)

    assert len(encoded.resource_spans) == 2
    assert encoded.SerializeToString(deterministic=True) == stock_encode_spans(spans).SerializeToString(
        deterministic=True
    )


def test_the_kept_attributes_start_again_past_their_bound(
    finished: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otlp_encoding, "_kept_attributes", {})
    monkeypatch.setattr(otlp_encoding, "KEPT_ATTRIBUTES_MAX", 2)
    spans = list(finished.get_finished_spans())

    encoded = otlp_encoding.encode_spans(spans).SerializeToString(deterministic=True)

    assert len(otlp_encoding._kept_attributes) <= 2
    assert encoded == stock_encode_spans(spans).SerializeToString(deterministic=True)


def test_values_at_the_wire_format_s_edges_are_the_stock_encoder_s_bytes() -> None:
    """Values whose encoding the wire format treats apart: negative ints (ten-byte varints), lengths past one varint
    byte, non-ASCII and empty strings, zero times, dropped counts, every kind and status."""
    exporter = InMemorySpanExporter()
    limits = SpanLimits(max_span_attributes=5, max_events=1, max_links=1)
    provider = TracerProvider(resource=Resource({"service.name": "notifyhub"}), span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("notifyhub")
    attributes = {"negative": -1, "most negative": -(2**63), "float": -2.5, "non-ascii": "héllo ✓", "empty": ""}
    with tracer.start_as_current_span("é" * 100, kind=SpanKind.PRODUCER, attributes=attributes, start_time=0) as span:
        span.set_attribute("dropped", "x" * 300)
        span.add_event("first")
        span.add_event("dropped")
        span.set_status(Status(StatusCode.OK))
    with tracer.start_as_current_span("", kind=SpanKind.CONSUMER, links=[Link(REMOTE_PARENT), Link(REMOTE_PARENT)]):
        pass
    for zero in (0.0, -0.0, math.nan):  # equal to each other, or to nothing, yet each its own bits
        with tracer.start_as_current_span("zero", attributes={"zero": zero}):
            pass
    tracer.start_span("ended at zero", attributes={"long": "y" * 300}, start_time=0).end(end_time=0)
    spans = list(exporter.get_finished_spans())

    assert otlp_encoding.encode_spans(spans).SerializeToString() == stock_encode_spans(spans).SerializeToString()
    provider.shutdown()
