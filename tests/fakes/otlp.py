"""An OpenTelemetry collector's OTLP/HTTP traces receiver: a real local server that decodes and keeps the spans.

It answers ``POST /v1/traces`` (protobuf, as gzip or plain) as a collector does, with an empty
ExportTraceServiceResponse, so the service's exporter sends to it exactly as it would to a collector.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
from opentelemetry.proto.trace.v1.trace_pb2 import Status

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class Span:
    service: str
    trace_id: str  # hex, as the log lines carry it
    span_id: str
    parent_id: str  # "" for a root span
    name: str
    kind: str  # SERVER, CLIENT, CONSUMER, INTERNAL, PRODUCER
    attributes: dict[str, Any]
    failed: bool  # its status is ERROR
    start: int  # nanoseconds since the epoch

    def parent(self, spans: list[Span]) -> Span:
        (found,) = [span for span in spans if span.span_id == self.parent_id]
        return found

    def ancestors(self, spans: list[Span]) -> list[Span]:
        """Its parent, the parent's parent, up to the root, as far as ``spans`` holds them."""
        by_id = {span.span_id: span for span in spans}
        chain, current = [], by_id.get(self.parent_id)
        while current is not None:
            chain.append(current)
            current = by_id.get(current.parent_id)
        return chain


class OtlpReceiver:
    """``keep``: keeps every span decoded (the tests); else counts them only, as a bench's collector that must not
    grow (bench/traces.py)."""

    def __init__(self, *, keep: bool = True) -> None:
        self.spans: list[Span] = []
        self.received = 0  # spans decoded so far
        self._keep = keep
        self._arrived = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT is set to; the exporter adds /v1/traces."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def trace_of(self, attribute: str, value: Any, *, timeout: float = 20.0) -> list[Span]:
        """Every span of the trace that holds a span whose ``attribute`` is ``value``, once the trace is whole: one
        root, and every other span's parent among them (spans end, and are sent, children first)."""

        def trace() -> list[Span]:
            ids = {span.trace_id for span in self.spans if span.attributes.get(attribute) == value}
            return [span for span in self.spans if span.trace_id in ids]

        def whole(spans: list[Span]) -> bool:
            known = {span.span_id for span in spans}
            roots = [span for span in spans if not span.parent_id]
            return len(roots) == 1 and all(span.parent_id in known for span in spans if span.parent_id)

        with self._arrived:
            self._arrived.wait_for(lambda: whole(trace()), timeout)
            return trace()

    def _record(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        spans = [
            _span(_service(resource_spans.resource.attributes), message)
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for message in scope_spans.spans
        ]
        with self._arrived:
            self.received += len(spans)
            if self._keep:
                self.spans.extend(spans)
            self._arrived.notify_all()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != TRACES_PATH:
                    self._answer(404, b"")
                    return
                receiver._record(body)
                self._answer(200, ExportTraceServiceResponse().SerializeToString())

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _span(service: str, message: SpanMessage) -> Span:
    return Span(
        service=service,
        trace_id=message.trace_id.hex(),
        span_id=message.span_id.hex(),
        parent_id=message.parent_span_id.hex(),
        name=message.name,
        kind=SpanMessage.SpanKind.Name(message.kind).removeprefix("SPAN_KIND_"),
        attributes={attribute.key: _value(attribute.value) for attribute in message.attributes},
        failed=message.status.code == Status.STATUS_CODE_ERROR,
        start=message.start_time_unix_nano,
    )


def _service(attributes: Any) -> str:
    return next((_value(a.value) for a in attributes if a.key == "service.name"), "")


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "bool_value", "int_value", "double_value") else None
