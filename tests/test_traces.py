"""Traces (docs/observability.md, "Traces"): without OTEL_EXPORTER_OTLP_ENDPOINT no SDK is set up; with it, a web
process and a worker, as production starts them, export one trace from a send's request through the worker's
attempt to the receiver's or providers' HTTP call, to a local OTLP receiver, and the receiver sees no trace header.

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

from bench.common import BIN, ROOT, port_open
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


def test_without_the_endpoint_no_trace_set_up_is_loaded() -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    done = subprocess.run([sys.executable, "-c", LOADED], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])

    assert "core.tracing" in modules
    assert [name for name in modules if name.startswith(SET_UP_MODULES)] == []


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
    attempt = only(spans, name="notifyhub.attempt")
    assert attempt.attributes == {
        JOB_ID: job_id,
        "notifyhub.job.type": "webhook",
        "notifyhub.attempt": 1,
        "notifyhub.attempt.outcome": "success",
        "http.response.status_code": 200,
    }
    task = attempt.parent(spans)
    assert (task.name, task.kind) == ("run/notifications.deliver_job", "CONSUMER")
    request = task.ancestors(spans)[-1]
    assert (request.name, request.kind, request.parent_id) == ("POST api/v1/notifications/webhook", "SERVER", "")
    # The send's request went through the lean chain (an API key): its span is the instrumentation's all the same.
    assert request.attributes["http.route"] == "api/v1/notifications/webhook"
    (call,) = [span for span in spans if "http.url" in span.attributes and span.parent_id == attempt.span_id]
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
def test_an_email_s_failover_is_two_provider_calls_under_one_attempt(
    traced: Service, otlp: OtlpReceiver, providers: tuple[FakeSendGrid, FakeResend], startup: Client
) -> None:
    sendgrid, resend = providers
    ready_to_send(startup, "SENDGRID", "RESEND")
    sendgrid.fail(500)

    job_id = send(traced, startup, "email", {"to": "user@example.com", "subject": "Hi", "body": "<p>Hi</p>"})
    assert wait_for_job(job_id, timeout=30).status == "completed"

    spans = otlp.trace_of(JOB_ID, job_id)
    attempt = only(spans, name="notifyhub.attempt")
    assert attempt.attributes[JOB_ID] == job_id
    assert (attempt.attributes["notifyhub.job.type"], attempt.attributes["notifyhub.provider"]) == ("email", "RESEND")
    calls = sorted(
        (span for span in spans if "http.url" in span.attributes and span.parent_id == attempt.span_id),
        key=lambda span: span.start,
    )
    # SendGrid first, answering 500, then Resend.
    assert [
        (_host(call.attributes["http.url"]), call.attributes["http.status_code"], call.failed) for call in calls
    ] == [
        (_host(sendgrid.url), 500, True),
        (_host(resend.url), 200, False),
    ]
    assert attempt.ancestors(spans)[-1].name == "POST api/v1/notifications/email"
    for fake in (sendgrid, resend):
        assert not {name.lower() for name in fake.calls[-1].headers} & set(TRACE_HEADERS)


def _is_redis(span: Span) -> bool:
    return span.attributes.get("db.system") == "redis"


def _host(url: str) -> str:
    return urlsplit(url).netloc
