"""core/otel.py's statement, Redis command and outgoing call spans (docs/departures.md, "client-span-start"): the
spans the psycopg, Redis and requests instrumentations' own wrappers make, for a call that succeeds and one that
fails, under the same parent."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
import pytest
import redis
import requests
from django.conf import settings
from django.db import connection
from opentelemetry.instrumentation import requests as requests_instrumentation
from opentelemetry.instrumentation.dbapi import DatabaseApiIntegration
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from core import otel

# The instrumentation's own cursor tracer, which otel.start() replaces in its module.
STOCK_STATEMENT_TRACER = otel.StatementTracer.__mro__[1]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


def _provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _seen(span: ReadableSpan, parent: ReadableSpan) -> tuple[Any, ...]:
    """All a back end shows of a span but its ids, times and the exception's stack trace."""
    events = [
        (event.name, {name: value for name, value in (event.attributes or {}).items() if "stacktrace" not in name})
        for event in span.events
    ]
    assert span.parent is not None
    assert span.parent.span_id == parent.context.span_id
    return span.name, span.kind, dict(span.attributes or {}), span.status.status_code, span.status.description, events


def _under_a_parent(exporter: InMemorySpanExporter, provider: TracerProvider, run: Callable[[], None]) -> list[Any]:
    exporter.clear()
    with provider.get_tracer("test").start_as_current_span("parent"):
        run()
    *children, parent = exporter.get_finished_spans()
    return [_seen(child, parent) for child in children]


@pytest.mark.postgres  # the psycopg instrumentation's side runs on psycopg's own connection
@pytest.mark.django_db
def test_a_statement_s_span_is_the_psycopg_instrumentation_s(exporter: InMemorySpanExporter) -> None:
    provider = _provider(exporter)
    connection.ensure_connection()
    raw = connection.connection
    integration = DatabaseApiIntegration(
        "opentelemetry.instrumentation.psycopg",
        PsycopgInstrumentor._DATABASE_SYSTEM,
        connection_attributes=PsycopgInstrumentor._CONNECTION_ATTRIBUTES,
        tracer_provider=provider,
        connect_module=psycopg,
    )
    integration.get_connection_attributes(raw)

    def statements(tracer: Any) -> Callable[[], None]:
        def run() -> None:
            with raw.cursor() as cursor:
                tracer.traced_execution(cursor, cursor.execute, "SELECT %s::int + 1", (41,))
                with pytest.raises(psycopg.errors.DivisionByZero):
                    tracer.traced_execution(cursor, cursor.execute, "SELECT 1 / 0")

        return run

    def in_a_savepoint(run: Callable[[], None]) -> Callable[[], None]:
        """The failing statement aborts the transaction it runs in: each side in a savepoint rolled back after."""

        def saved() -> None:
            with raw.cursor() as cursor:
                cursor.execute("SAVEPOINT spans")
            try:
                run()
            finally:
                with raw.cursor() as cursor:
                    cursor.execute("ROLLBACK TO SAVEPOINT spans")

        return saved

    stock = _under_a_parent(exporter, provider, in_a_savepoint(statements(STOCK_STATEMENT_TRACER(integration))))
    ours = _under_a_parent(exporter, provider, in_a_savepoint(statements(otel.StatementTracer(integration))))

    assert len(ours) == 2
    assert ours == stock
    assert ours[1][3].name == "ERROR"


@pytest.mark.redis
def test_a_redis_command_s_span_is_the_redis_instrumentation_s(exporter: InMemorySpanExporter) -> None:
    provider = _provider(exporter)
    tracer: Tracer = provider.get_tracer("opentelemetry.instrumentation.redis")
    client = redis.Redis.from_url(settings.REDIS_URL)
    key = "notifyhub-test-client-spans"
    client.set(key, "not a number")

    def commands(wrapper: Callable[..., Any]) -> Callable[[], None]:
        def run() -> None:
            execute = redis.Redis.execute_command
            wrapper(lambda *args, **kwargs: execute(client, *args, **kwargs), client, ("GET", key), {})
            with pytest.raises(redis.ResponseError):
                wrapper(lambda *args, **kwargs: execute(client, *args, **kwargs), client, ("INCR", key), {})

        return run

    try:
        stock = _under_a_parent(exporter, provider, commands(otel.STOCK_REDIS_TRACING(tracer)))
        ours = _under_a_parent(exporter, provider, commands(otel._redis_command_tracing(tracer)))
    finally:
        client.delete(key)
        client.close()

    assert len(ours) == 2
    assert ours == stock
    assert ours[1][3].name == "ERROR"


class Answers(BaseHTTPRequestHandler):
    """200 on any path but /unavailable, 503 there."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(503 if self.path.startswith("/unavailable") else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_outgoing_call_s_span_is_the_requests_instrumentation_s(
    exporter: InMemorySpanExporter, answering: str
) -> None:
    provider = _provider(exporter)
    tracer: Tracer = provider.get_tracer("opentelemetry.instrumentation.requests")
    send = requests.Session.send
    requests_instrumentation._instrument(tracer, None, None, request_hook=otel._origin_only)
    stock = requests.Session.send
    requests.Session.send = send  # type: ignore[method-assign]
    ours = otel._requests_tracing(tracer, send, None)
    closed = f"http://127.0.0.1:{_closed_port()}/secret"

    def calls(traced_send: Callable[..., Any]) -> Callable[[], None]:
        def run() -> None:
            with requests.Session() as session:
                headers = {"User-Agent": "NotifyHub-Webhooks/1.0"}
                for url in (f"{answering}/hooks/secret?token=x", f"{answering}/unavailable"):
                    prepared = session.prepare_request(requests.Request("POST", url, data=b"{}", headers=headers))
                    traced_send(session, prepared, timeout=5)
                prepared = session.prepare_request(requests.Request("POST", closed, data=b"{}"))
                with pytest.raises(requests.ConnectionError):
                    traced_send(session, prepared, timeout=5)

        return run

    stock_spans = _under_a_parent(exporter, provider, calls(stock))
    our_spans = _under_a_parent(exporter, provider, calls(ours))

    assert len(our_spans) == 3
    assert our_spans == stock_spans
    assert [span[3].name for span in our_spans] == ["UNSET", "ERROR", "ERROR"]
    assert our_spans[0][2]["http.url"] == answering
