"""Log lines: one JSON object per request and per delivery attempt, with their fields and never a secret."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts.services import signing_secret_generate
from core.logs import JsonFormatter
from tests.clients import APIClient
from tests.conftest import WEBHOOK, Client, wait_for_job
from tests.fakes.receiver import Receiver
from tests.test_deploy import PRODUCTION, ROOT, run

Lines = Callable[[str], list[dict[str, Any]]]


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """What the request and delivery loggers write at INFO, formatted as production formats it.

    At INFO whatever the root logger's level: the test worker sets it to its own (WARNING) when it starts.
    """
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    loggers = [logging.getLogger("notifyhub.request"), logging.getLogger("notifyhub.delivery")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    yield stream
    for logger in loggers:
        logger.removeHandler(handler)
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
