"""GET /api/v1/health: 200 when the database and the broker answer, 503 naming what does not, and never a hang."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from tests.clients import APIClient
from tests.conftest import Client, free_port
from tests.test_deploy import PRODUCTION, run

HEALTH = "/api/v1/health"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word, like a server that hangs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


def point_database_at(monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    """The database settings the health check reads, aimed at ``port``; the test's own connection keeps its own."""
    database = dict(connections.settings[DEFAULT_DB_ALIAS])
    if connection.vendor == "postgresql":
        database.update(HOST="127.0.0.1", PORT=str(port))
    else:
        database["NAME"] = "/nonexistent/notifyhub/db.sqlite3"
    monkeypatch.setitem(connections.settings, DEFAULT_DB_ALIAS, database)


@pytest.fixture
def database_down(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    point_database_at(monkeypatch, free_port())


@pytest.fixture
def broker_down(settings: Any) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"


def health() -> Any:
    return APIClient().get(HEALTH)


def test_it_answers_ok_when_the_database_and_the_broker_answer(db: None) -> None:
    response = health()

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert body["data"] == {"status": "ok", "database": "ok", "broker": "ok"}
    assert "retry-after" not in response.headers


def test_it_needs_no_session_and_sets_no_cookie(db: None) -> None:
    response = health()

    assert "set-cookie" not in response.headers
    assert "cookie" not in response.headers.get("vary", "").lower()


@pytest.mark.usefixtures("database_down")
def test_a_database_that_does_not_answer_is_a_503_naming_it() -> None:
    response = health()

    assert response.status_code == 503
    body = response.json()
    assert body["success"] is False
    assert body["error"] == "Service unavailable: database"
    assert body["details"] == {"database": "down", "broker": "ok"}
    assert isinstance(body["timestamp"], str)
    assert "data" not in body


@pytest.mark.usefixtures("broker_down")
def test_a_redis_broker_that_does_not_answer_is_a_503_naming_it(db: None) -> None:
    response = health()

    assert response.status_code == 503
    assert response.json()["error"] == "Service unavailable: broker"
    assert response.json()["details"] == {"database": "ok", "broker": "down"}


def test_a_file_broker_whose_folder_takes_no_file_is_down(db: None, settings: Any, tmp_path: Any) -> None:
    settings.REDIS_URL = None
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": str(tmp_path / "gone")}

    response = health()

    assert response.status_code == 503
    assert response.json()["details"]["broker"] == "down"


@pytest.mark.usefixtures("database_down", "broker_down")
def test_both_parts_down_are_both_named() -> None:
    response = health()

    assert response.status_code == 503
    assert response.json()["error"] == "Service unavailable: database, broker"
    assert response.json()["details"] == {"database": "down", "broker": "down"}


def test_a_broker_that_hangs_is_down_within_the_timeout(db: None, settings: Any, silent_port: int) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{silent_port}/0"
    started = time.monotonic()

    response = health()

    assert response.status_code == 503
    assert time.monotonic() - started < 4
    assert response.json()["details"]["broker"] == "down"


@pytest.mark.postgres
def test_a_database_that_hangs_is_down_within_the_timeout(
    db: None, monkeypatch: pytest.MonkeyPatch, silent_port: int
) -> None:
    point_database_at(monkeypatch, silent_port)
    started = time.monotonic()

    response = health()

    assert response.status_code == 503
    assert time.monotonic() - started < 4
    assert response.json()["details"]["database"] == "down"


def test_it_is_not_rate_limited_even_with_an_api_key(free: Client) -> None:
    statuses = {free.get(HEALTH).status_code for _ in range(12)}  # the Free plan allows 5 a minute

    assert statuses == {200}


PLAIN_HTTP_STATUSES = (
    "import django; django.setup(); from django.test import Client; client = Client(HTTP_HOST='notify.example.com'); "
    "print(*(client.get(path).status_code for path in ['/api/v1/health', '/metrics', '/api/v1/info']))"
)


def test_in_production_probes_and_scrapers_are_answered_over_plain_http(tmp_path: Path) -> None:
    printed = run([sys.executable, "-c", PLAIN_HTTP_STATUSES], tmp_path, **PRODUCTION)

    health_status, metrics_status, info_status = printed.stdout.split()
    assert health_status in ("200", "503"), printed.stderr
    assert metrics_status == "200"
    assert info_status == "301"  # everything else still goes to HTTPS
