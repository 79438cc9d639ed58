"""Log lines: one JSON object per request and per delivery attempt, with their fields and never a secret; the
request id, job id and attempt on every line written meanwhile."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from celery.signals import task_postrun, task_prerun

from accounts.services import signing_secret_generate
from core.logs import JsonFormatter, TextFormatter, log_context
from notifications import tasks
from notifications.engine.processing import job_process
from notifications.engine.queue import DELIVER_TASK
from notifyhub.celery import app as celery_app
from tests.clients import APIClient
from tests.conftest import WEBHOOK, Client, wait_for_job
from tests.fakes.receiver import Receiver
from tests.test_deploy import PRODUCTION, ROOT, run

Lines = Callable[[str], list[dict[str, Any]]]


@contextmanager
def console_output(formatter: logging.Formatter) -> Iterator[io.StringIO]:
    """What the service's console handler (``LOGGING`` in the settings, its filter included) writes meanwhile."""
    (console,) = [handler for handler in logging.getLogger().handlers if handler.name == "console"]
    assert isinstance(console, logging.StreamHandler)
    stream, formatter_before = io.StringIO(), console.formatter
    stream_before = console.setStream(stream)
    console.setFormatter(formatter)
    try:
        yield stream
    finally:
        console.setStream(stream_before)
        console.setFormatter(formatter_before)


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Every line the service writes, with the request and delivery loggers at INFO, formatted as production
    formats it.

    At INFO whatever the root logger's level: the test worker sets it to its own (WARNING) when it starts.
    """
    loggers = [logging.getLogger("notifyhub.request"), logging.getLogger("notifyhub.delivery")]
    for logger in loggers:
        logger.setLevel(logging.INFO)
    with console_output(JsonFormatter()) as stream:
        yield stream
    for logger in loggers:
        logger.setLevel(logging.NOTSET)


@pytest.fixture
def lines(captured: io.StringIO) -> Lines:
    def of(logger: str) -> list[dict[str, Any]]:
        parsed = [json.loads(line) for line in captured.getvalue().splitlines()]
        return [line for line in parsed if line["logger"] == logger]

    return of


def test_a_request_is_one_json_line_with_its_fields(free: Client, lines: Lines) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook?api_key=query-secret",
        WEBHOOK,
        format="json",
        HTTP_X_API_KEY=free.api_key,
        HTTP_X_REQUEST_ID="req-42.a",
    )

    assert response.status_code == 202
    (line,) = lines("notifyhub.request")
    assert line["level"] == "INFO"
    assert line["time"].endswith("Z")
    assert line["message"].startswith("POST /api/v1/notifications/webhook 202 ")
    assert {key: line[key] for key in ["method", "path", "status", "account_id", "request_id"]} == {
        "method": "POST",
        "path": "/api/v1/notifications/webhook",
        "status": 202,
        "account_id": free.account.pk,
        "request_id": "req-42.a",
    }
    assert line["duration_ms"] > 0
    assert response["X-Request-ID"] == "req-42.a"


def test_a_request_line_holds_no_key_and_no_query(free: Client, captured: io.StringIO) -> None:
    free.http.get("/api/v1/ping?token=query-secret", HTTP_AUTHORIZATION=f"Bearer {free.api_key}")

    text = captured.getvalue()
    assert free.api_key not in text
    assert "query-secret" not in text
    assert "Bearer" not in text


def test_an_unusable_request_id_is_replaced(db: None, lines: Lines) -> None:
    response = APIClient().get("/api/v1/info", HTTP_X_REQUEST_ID="two words")

    (line,) = lines("notifyhub.request")
    assert line["request_id"] != "two words"
    assert len(line["request_id"]) == 32
    assert response["X-Request-ID"] == line["request_id"]
    assert line["account_id"] is None


def test_a_one_time_token_in_a_path_is_masked(db: None, lines: Lines) -> None:
    APIClient().get("/password-reset/MQ/cdq9zz-5a2e1c0ffee0123456789abcdef01234/")

    (line,) = lines("notifyhub.request")
    assert line["path"] == "/password-reset/MQ/***/"


@pytest.mark.usefixtures("worker")
def test_a_delivery_attempt_is_one_json_line_without_secrets(
    free: Client, receiver: Receiver, captured: io.StringIO, lines: Lines
) -> None:
    signing_secret = signing_secret_generate(account=free.account)
    url = f"https://hookuser:hookpass@127.0.0.1:{receiver.port}/hooks/path-secret?token=query-secret"

    response = free.send_webhook(url=url)
    job = wait_for_job(response.json()["data"]["jobId"])

    line = wait_for_line(lines, "notifyhub.delivery")
    assert {key: line[key] for key in ["job_id", "account_id", "type", "attempt", "outcome", "job_status"]} == {
        "job_id": str(job.id),
        "account_id": free.account.pk,
        "type": "webhook",
        "attempt": 1,
        "outcome": "success",
        "job_status": "completed",
    }
    assert (line["status_code"], line["provider"], line["error"]) == (200, None, None)
    assert line["url"] == f"https://127.0.0.1:{receiver.port}"
    assert line["duration_ms"] > 0
    text = captured.getvalue()
    for secret in [signing_secret, free.api_key, "hookuser", "hookpass", "path-secret", "query-secret"]:
        assert secret not in text


def wait_for_line(lines: Lines, logger: str, timeout: float = 10.0) -> dict[str, Any]:
    """The worker logs an attempt just after recording it: the test may look a moment before."""
    deadline = time.monotonic() + timeout
    while not (found := lines(logger)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert found, f"no {logger} line"
    return found[0]


def test_a_warning_logged_during_a_request_carries_the_request_id(db: None, lines: Lines) -> None:
    browser = APIClient()
    for _ in range(5):
        browser.post("/password-reset/", {"email": "ada@example.com"})

    refused = browser.post("/password-reset/", {"email": "ada@example.com"})

    assert refused.status_code == 429
    request_line = lines("notifyhub.request")[-1]
    (refusal,) = lines("core.signin")
    (answer,) = lines("django.request")
    assert refusal["message"].startswith("password-reset refused for 'ada@example.com'")
    assert answer["message"] == "Too Many Requests: /password-reset/"
    assert refusal["request_id"] == answer["request_id"] == request_line["request_id"] == refused["X-Request-ID"]


def test_django_s_line_for_an_api_error_carries_the_proxy_s_request_id(free: Client, lines: Lines) -> None:
    response = free.http.get("/api/v1/no-such-thing", HTTP_X_API_KEY=free.api_key, HTTP_X_REQUEST_ID="req-404")

    assert response.status_code == 404
    (answer,) = lines("django.request")
    assert (answer["message"], answer["request_id"]) == ("Not Found: /api/v1/no-such-thing", "req-404")


def test_a_line_written_after_the_request_carries_no_request_id(db: None, lines: Lines) -> None:
    APIClient().get("/api/v1/info")

    logging.getLogger("tests.after").warning("later")

    (line,) = lines("tests.after")
    assert "request_id" not in line


@pytest.mark.usefixtures("worker")
def test_a_line_the_worker_writes_while_it_handles_a_job_carries_the_job_id(
    free: Client, receiver: Receiver, lines: Lines, monkeypatch: pytest.MonkeyPatch
) -> None:
    def job_process_saying_so(*, job_id: UUID) -> None:
        logging.getLogger("tests.worker").warning("delivering")
        job_process(job_id=job_id)

    monkeypatch.setattr(tasks, "job_process", job_process_saying_so)

    job = wait_for_job(free.send_webhook(url=receiver.url("/hook")).json()["data"]["jobId"])

    assert job.status == "completed"
    (line,) = lines("tests.worker")
    assert line["job_id"] == str(job.id)


def test_the_job_id_is_dropped_when_its_task_ends(lines: Lines) -> None:
    task = celery_app.tasks[DELIVER_TASK]
    logger = logging.getLogger("tests.worker")

    task_prerun.send(sender=task, task_id="task-1", task=task, args=["job-1"], kwargs={})
    logger.warning("during")
    task_postrun.send(sender=task, task_id="task-1", task=task, args=["job-1"], kwargs={}, retval=None, state="")
    logger.warning("after")

    assert [line.get("job_id") for line in lines("tests.worker")] == ["job-1", None]


def test_the_attempt_named_by_the_engine_joins_the_job_id_until_its_block_ends(lines: Lines) -> None:
    """The engine names the attempt once it has claimed the job (notifications/engine/processing.py); called directly
    here, as the engine calls it."""
    logger = logging.getLogger("tests.worker")

    with log_context(job_id="job-1"):
        with log_context(attempt=2):
            logger.warning("attempting")
        logger.warning("attempt recorded")

    assert [(line["job_id"], line.get("attempt")) for line in lines("tests.worker")] == [("job-1", 2), ("job-1", None)]


def test_a_text_line_ends_with_the_ids_it_carries() -> None:
    with console_output(TextFormatter("%(levelname)s %(name)s: %(message)s")) as stream:
        with log_context(request_id="req-1"), log_context(job_id="job-1", attempt=2):
            logging.getLogger("tests.text").warning("hello")
        logging.getLogger("tests.text").warning("bye")

    assert stream.getvalue().splitlines() == [
        "WARNING tests.text: hello [request_id=req-1 job_id=job-1 attempt=2]",
        "WARNING tests.text: bye",
    ]


def test_the_json_formatter_keeps_plain_fields_and_the_exception() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.makeLogRecord(
            {"name": "x", "levelname": "ERROR", "msg": "failed %s", "args": ("once",), "exc_info": sys.exc_info()}
        )
    record.__dict__.update(job_id="j-1", attempt=2, request=object())

    line = json.loads(JsonFormatter().format(record))

    assert line["message"] == "failed once"
    assert (line["job_id"], line["attempt"]) == ("j-1", 2)
    assert "request" not in line  # not a plain value: Django's request objects print their query string
    assert "ValueError: boom" in line["exception"]


def test_the_formatter_loads_before_django_is_set_up() -> None:
    """Django configures logging while it sets up: the formatter's module must need nothing set up yet."""
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    record = "logging.makeLogRecord({'created': 0, 'msecs': 0})"
    probe = f"import core.logs, logging; print(core.logs.JsonFormatter().format({record}))"

    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["time"] == "1970-01-01T00:00:00.000Z"


PRINT_LOG_FORMAT = "import django; django.setup(); from django.conf import settings; print(settings.LOG_FORMAT)"


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({}, "text"),
        (PRODUCTION, "json"),
        ({**PRODUCTION, "LOG_FORMAT": "text"}, "text"),
        ({"LOG_FORMAT": "json"}, "json"),
    ],
    ids=["embedded", "production", "production-as-text", "embedded-as-json"],
)
def test_the_log_format_defaults_to_json_in_production_only(
    tmp_path: Path, environment: dict[str, str], expected: str
) -> None:
    printed = run([sys.executable, "-c", PRINT_LOG_FORMAT], tmp_path, **environment)

    assert printed.stdout.strip() == expected, printed.stderr


def test_an_unknown_log_format_stops_start_up(tmp_path: Path) -> None:
    printed = run([sys.executable, "-c", PRINT_LOG_FORMAT], tmp_path, LOG_FORMAT="xml")

    assert printed.returncode != 0
    assert "LOG_FORMAT must be 'json' or 'text', got 'xml'" in printed.stderr


PRINT_TASK_LOG_LEVELS = (
    "import logging, django; django.setup(); "
    "print(*(logging.getLevelName(logging.getLogger(name).getEffectiveLevel()) "
    "for name in ('celery.worker.strategy', 'celery.app.trace', 'celery.beat', 'notifyhub.delivery')))"
)


@pytest.mark.parametrize(
    ("environment", "expected"),
    [({}, "WARNING WARNING WARNING INFO"), ({"WORKER_TASK_LOG": "true"}, "INFO INFO INFO INFO")],
    ids=["default", "switched-on"],
)
def test_celery_s_lines_a_task_are_off_unless_switched_on_and_the_delivery_line_stays(
    tmp_path: Path, environment: dict[str, str], expected: str
) -> None:
    printed = run([sys.executable, "-c", PRINT_TASK_LOG_LEVELS], tmp_path, **{**PRODUCTION, **environment})

    assert printed.stdout.strip() == expected, printed.stderr
