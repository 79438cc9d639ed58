"""Traces (docs/observability.md, "Traces"): without OTEL_EXPORTER_OTLP_ENDPOINT no SDK is set up; with it, a web
process and a worker, as production starts them, export one trace from a send's request through the worker's
task to the receiver's or providers' HTTP call, to a local OTLP receiver, and the receiver sees no trace header.

The service's processes are the module's own (gunicorn and a Celery worker), sharing this run's database and broker;
slow to start, so the module keeps to a few tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import trustme
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from django.urls import path
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util.http import parse_excluded_urls

from bench.common import BIN, ROOT, port_open
from core import otel
from core.api import status
from core.handlers import NotifyHubWSGIApplication
from tests.conftest import Client, free_port, purge_broker, ready_to_send, wait_for_job
from tests.fakes.otlp import OtlpReceiver, Span
from tests.fakes.providers import FakeResend, FakeSendGrid
from tests.fakes.receiver import Receiver
from tests.providers_fixtures import RESEND_KEY, SENDGRID_KEY

TRACE_HEADERS = ("traceparent", "tracestate", "baggage", "b3", "x-b3-traceid", "uber-trace-id")
JOB_ID = "notifyhub.job.id"
# What kombu's Redis transport sends to publish a task message and to take one (docs/observability.md, "Spans").
BROKER_COMMANDS = ("LPUSH", "RPUSH", "BRPOP", "ZADD", "HSET", "ZREM", "HDEL", "MULTI", "EXEC")
# Modules only the trace set-up loads (redis-py imports opentelemetry.sdk.metrics by itself once the SDK is
# installed, to see whether its own metrics could be switched on; it sets nothing up).
SET_UP_MODULES = (
    "core.otel",
    "core.otlp_encoding",
    "opentelemetry.sdk.trace",
    "opentelemetry.instrumentation",
    "opentelemetry.exporter",
    "opentelemetry.propagate",
)
LOADED = """
import json, sys
import django
django.setup()
import notifyhub.wsgi, notifyhub.celery, notifications.tasks
from notifications.engine import processing, queue
print(json.dumps(sorted(sys.modules)))
"""


# A proxy's or a client's trace context, which the request's span continues.
PARENT_TRACE, PARENT_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def test_without_the_endpoint_no_trace_set_up_is_loaded() -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    done = subprocess.run([sys.executable, "-c", LOADED], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])

    assert "core.tracing" in modules
    assert [name for name in modules if name.startswith(SET_UP_MODULES)] == []


@pytest.fixture
def server_spans(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[InMemorySpanExporter]:
    """Both middleware chains with the server span's middleware registered as the set-up registers it, its spans
    kept in memory (the global provider and the instrumentations left alone)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(otel.ServerSpanMiddleware, "tracer", otel.ServerSpanMiddleware.tracer)
    # Through the fixture, which puts the lists back after the test.
    settings.MIDDLEWARE, settings.API_KEY_MIDDLEWARE = list(settings.MIDDLEWARE), list(settings.API_KEY_MIDDLEWARE)
    otel.server_spans_start(provider.get_tracer(otel.TRACER_NAME))
    yield exporter
    provider.shutdown()


def wsgi_get(path: str, *, query: str = "", **headers: str) -> str:
    """A GET through a WSGI application built now (its two handlers load their chains), as gunicorn calls it; its
    status line. ``headers`` as META names them (``HTTP_TRACEPARENT``)."""
    environ = {
        **RequestFactory().get(path).environ,
        "QUERY_STRING": query,
        "HTTP_HOST": "localhost:8000",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "8000",
        "REMOTE_ADDR": "10.1.2.3",
        "REMOTE_PORT": "5555",
        "HTTP_USER_AGENT": "probe/1.0",
        **headers,
    }
    lines: list[str] = []
    body = NotifyHubWSGIApplication()(environ, lambda line, headers, exc_info=None: lines.append(line))
    b"".join(body)
    getattr(body, "close", lambda: None)()
    return lines[0]


def server_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = [span for span in exporter.get_finished_spans() if span.kind is SpanKind.SERVER]
    return span


@pytest.mark.django_db
def test_a_request_s_server_span_continues_its_trace_and_names_its_route(
    server_spans: InMemorySpanExporter,
) -> None:
    traceparent = f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"
    # The health check goes through the lean chain (core/handlers.py).
    assert wsgi_get("/api/v1/health", query="token=query-secret", HTTP_TRACEPARENT=traceparent).startswith("200")

    span = server_span(server_spans)
    assert (span.name, span.status.status_code) == ("GET api/v1/health", StatusCode.UNSET)
    assert span.parent is not None
    assert span.parent.is_remote
    assert (format(span.parent.trace_id, "032x"), format(span.parent.span_id, "016x")) == (PARENT_TRACE, PARENT_SPAN)
    assert span.context.trace_id == span.parent.trace_id
    assert dict(span.attributes or {}) == {
        "http.method": "GET",
        "http.route": "api/v1/health",
        "http.target": "/api/v1/health",
        "http.status_code": 200,
        "http.scheme": "http",
        "http.flavor": "1.1",
        "http.server_name": "localhost",
        "http.host": "localhost:8000",
        "net.host.name": "localhost:8000",
        "net.host.port": 8000,
        "net.peer.ip": "10.1.2.3",
        "net.peer.port": 5555,
        "http.user_agent": "probe/1.0",
    }
    # The request's spans (the health check's statement) hang from it.
    children = [other for other in server_spans.get_finished_spans() if other is not span]
    assert all(child.parent is not None and child.parent.span_id == span.context.span_id for child in children)


@pytest.mark.django_db
def test_a_site_request_has_its_server_span_and_one_without_traceparent_starts_a_trace(
    server_spans: InMemorySpanExporter,
) -> None:
    # No API key: Django's own chain (settings.MIDDLEWARE).
    assert wsgi_get("/login/", query="next=/query-secret").startswith("200")

    span = server_span(server_spans)
    assert (span.name, span.parent, span.status.status_code) == ("GET login/", None, StatusCode.UNSET)
    assert span.attributes is not None
    assert (span.attributes["http.route"], span.attributes["http.target"]) == ("login/", "/login/")
    assert "query-secret" not in repr(span.attributes)


@pytest.mark.django_db
def test_a_5xx_answer_is_the_server_span_s_error(
    server_spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def health_check() -> None:
        raise RuntimeError("the check broke")

    # The API's exception handler answers 500 itself (core/api/exceptions.py): the answer's status makes the error.
    monkeypatch.setattr(status, "health_check", health_check)

    assert wsgi_get("/api/v1/health").startswith("500")

    span = server_span(server_spans)
    assert span.attributes is not None
    assert span.attributes["http.status_code"] == 500
    assert span.status.status_code is StatusCode.ERROR


@pytest.mark.django_db
def test_an_excluded_path_makes_no_server_span(
    server_spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otel.ServerSpanMiddleware, "excluded", parse_excluded_urls("api/v1/health,metrics"))

    assert wsgi_get("/api/v1/health").startswith("200")
    assert wsgi_get("/api/v1/info").startswith("200")

    assert [span.name for span in server_spans.get_finished_spans() if span.kind is SpanKind.SERVER] == [
        "GET api/v1/info"
    ]


def broken_view(request: HttpRequest, number: int) -> HttpResponse:
    raise RuntimeError(f"page {number} broke")


urlpatterns = [path("broken/<int:number>", broken_view)]


@pytest.mark.django_db
def test_a_view_s_exception_is_recorded_on_the_server_span(server_spans: InMemorySpanExporter, settings: Any) -> None:
    settings.ROOT_URLCONF = __name__  # a page's view that raises, which Django answers with a 500

    assert wsgi_get("/broken/7").startswith("500")

    span = server_span(server_spans)
    assert span.name == "GET broken/<int:number>"
    assert span.attributes is not None
    assert (span.attributes["http.status_code"], span.attributes["http.target"]) == (500, "/broken/7")
    assert (span.status.status_code, span.status.description) == (StatusCode.ERROR, "RuntimeError: page 7 broke")
    assert [(event.name, (event.attributes or {}).get("exception.type")) for event in span.events] == [
        ("exception", "RuntimeError")
    ]


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def module_receiver(ca: trustme.CA) -> Iterator[Receiver]:
    with Receiver(ca) as receiver:
        yield receiver


@pytest.fixture(scope="module")
def providers() -> Iterator[tuple[FakeSendGrid, FakeResend]]:
    with FakeSendGrid() as sendgrid, FakeResend() as resend:
        sendgrid.accept_key(SENDGRID_KEY)
        resend.accept_key(RESEND_KEY)
        yield sendgrid, resend


@dataclass(frozen=True)
class Service:
    port: int
    web_log: Path

    def log_lines(self, logger: str) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in self.web_log.read_text().splitlines() if line.startswith("{")]
        return [line for line in lines if line["logger"] == logger]


@pytest.fixture(scope="module")
def traced(
    django_db_setup: None,
    django_db_blocker: Any,
    otlp: OtlpReceiver,
    ca_bundle: str,
    providers: tuple[FakeSendGrid, FakeResend],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Service]:
    """gunicorn and a Celery worker as the Procfile starts them (a thread pool), exporting to ``otlp``."""
    sendgrid, resend = providers
    db = connection.settings_dict
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith("OTEL_")},
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL or "",
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "WEBHOOK_CA_BUNDLE": ca_bundle,
        "SENDGRID_API_URL": sendgrid.url,
        "RESEND_API_URL": resend.url,
        "WEB_CONCURRENCY": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    port = free_port()
    logs = tmp_path_factory.mktemp("traces")
    web = [str(BIN / "gunicorn"), "notifyhub.wsgi", "--config", "gunicorn.conf.py"]
    worker = [str(BIN / "celery"), "--app", "notifyhub", "worker", "--pool", "threads", "--loglevel", "WARNING"]
    with django_db_blocker.unblock():
        purge_broker()
    with (
        _running(web, {**env, "GUNICORN_BIND": f"127.0.0.1:{port}"}, logs / "web.log"),
        _running(worker, env, logs / "worker.log"),
    ):
        deadline = time.monotonic() + 60
        while not port_open(port):
            assert time.monotonic() < deadline, f"gunicorn did not listen; see {logs / 'web.log'}"
            time.sleep(0.1)
        yield Service(port, logs / "web.log")
    with django_db_blocker.unblock():
        purge_broker()


@contextlib.contextmanager
def _running(command: list[str], env: dict[str, str], log: Path) -> Iterator[None]:
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def send(service: Service, client: Client, kind: str, body: dict[str, Any]) -> str:
    response = requests.post(
        f"http://127.0.0.1:{service.port}/api/v1/notifications/{kind}",
        json=body,
        headers={"X-API-Key": client.api_key},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    return str(response.json()["data"]["jobId"])


def only(spans: list[Span], **wanted: Any) -> Span:
    (found,) = [span for span in spans if all(getattr(span, name) == value for name, value in wanted.items())]
    return found


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_webhook_send_is_one_trace_from_the_request_to_the_receiver(
    traced: Service, otlp: OtlpReceiver, module_receiver: Receiver, free: Client
) -> None:
    # A receiver's path and query may carry its secret: a span names the origin alone.
    url = module_receiver.url("/traced?token=receiver-secret")
    job_id = send(traced, free, "webhook", {"url": url, "payload": {"n": 1}})
    assert wait_for_job(job_id, timeout=30).status == "completed"

    spans = otlp.trace_of(JOB_ID, job_id)
    # The attempt makes no span of its own: its attributes are on the task span, the HTTP call below it.
    task = attempt_task(
        spans,
        {
            JOB_ID: job_id,
            "notifyhub.job.type": "webhook",
            "notifyhub.attempt": 1,
            "notifyhub.attempt.outcome": "success",
            "http.response.status_code": 200,
        },
    )
    request = task.ancestors(spans)[-1]
    assert (request.name, request.kind, request.parent_id) == ("POST api/v1/notifications/webhook", "SERVER", "")
    # The send's request went through the lean chain (an API key): it has its server span all the same.
    assert request.attributes["http.route"] == "api/v1/notifications/webhook"
    (call,) = [span for span in spans if "http.url" in span.attributes and span.parent_id == task.span_id]
    assert call.kind == "CLIENT"
    assert (call.attributes["http.method"], call.attributes["http.status_code"]) == ("POST", 200)
    assert call.attributes["http.url"] == f"https://127.0.0.1:{module_receiver.port}"
    assert not [span for span in spans if "receiver-secret" in repr(span.attributes)]
    assert {span.service for span in spans} == {"notifyhub"}
    # The broker's commands outside any request or task (the worker's polling, its acknowledgements) make no trace.
    assert [span.name for span in otlp.spans if span.kind == "CLIENT" and not span.parent_id] == []
    # Nor do the publish's: the request's Redis command is the rate limit's alone, and the task span hangs from the
    # request's span.
    assert [span.name for span in spans if span.parent_id == request.span_id and _is_redis(span)] == ["EVALSHA"]
    assert not [span for span in otlp.spans if _is_redis(span) and span.name in BROKER_COMMANDS]

    # The request's log line names its span.
    (line,) = [
        line for line in traced.log_lines("notifyhub.request") if line["path"] == "/api/v1/notifications/webhook"
    ]
    assert (line["trace_id"], line["span_id"]) == (request.trace_id, request.span_id)

    (arrival,) = [arrival for arrival in module_receiver.arrivals if arrival.path.startswith("/traced")]
    assert not {name.lower() for name in arrival.headers} & set(TRACE_HEADERS)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_an_email_s_failover_is_two_provider_calls_under_one_task_span(
    traced: Service, otlp: OtlpReceiver, providers: tuple[FakeSendGrid, FakeResend], startup: Client
) -> None:
    sendgrid, resend = providers
    ready_to_send(startup, "SENDGRID", "RESEND")
    sendgrid.fail(500)

    job_id = send(traced, startup, "email", {"to": "user@example.com", "subject": "Hi", "body": "<p>Hi</p>"})
    assert wait_for_job(job_id, timeout=30).status == "completed"

    spans = otlp.trace_of(JOB_ID, job_id)
    task = attempt_task(
        spans,
        {
            JOB_ID: job_id,
            "notifyhub.job.type": "email",
            "notifyhub.attempt": 1,
            "notifyhub.attempt.outcome": "success",
            "notifyhub.provider": "RESEND",
        },
    )
    calls = sorted(
        (span for span in spans if "http.url" in span.attributes and span.parent_id == task.span_id),
        key=lambda span: span.start,
    )
    # SendGrid first, answering 500, then Resend.
    assert [
        (_host(call.attributes["http.url"]), call.attributes["http.status_code"], call.failed) for call in calls
    ] == [
        (_host(sendgrid.url), 500, True),
        (_host(resend.url), 200, False),
    ]
    assert task.ancestors(spans)[-1].name == "POST api/v1/notifications/email"
    for fake in (sendgrid, resend):
        assert not {name.lower() for name in fake.calls[-1].headers} & set(TRACE_HEADERS)


def attempt_task(spans: list[Span], attributes: dict[str, Any]) -> Span:
    """The worker's task span, which alone carries NotifyHub's attributes of the attempt: exactly ``attributes``."""
    task = only(spans, name="run/notifications.deliver_job")
    assert task.kind == "CONSUMER"
    assert ours(task) == attributes
    assert not [span for span in spans if span is not task and ours(span)]
    return task


def ours(span: Span) -> dict[str, Any]:
    """The attributes NotifyHub sets on ``span`` (the attempt's), without the instrumentation's own."""
    return {
        name: value
        for name, value in span.attributes.items()
        if name.startswith("notifyhub.") or name == "http.response.status_code"
    }


def _is_redis(span: Span) -> bool:
    return span.attributes.get("db.system") == "redis"


def _host(url: str) -> str:
    return urlsplit(url).netloc
