"""The database settings: the PostgreSQL backend's round-trip-free health check, and bad URLs refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper


@pytest.fixture
def own_connection(transactional_db: None) -> Iterator[BaseDatabaseWrapper]:
    """A second connection to the test database, persistent and health-checked as a worker's is."""
    wrapper = connections.create_connection(DEFAULT_DB_ALIAS)
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _backend_pid(wrapper: BaseDatabaseWrapper) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _last_statement_of(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return str(cursor.fetchone()[0])


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


def _wait_until_unusable(wrapper: BaseDatabaseWrapper) -> None:
    deadline = time.monotonic() + 5
    while wrapper.is_usable():
        assert time.monotonic() < deadline, "the terminated connection still looked usable after 5 s"
        time.sleep(0.01)


@pytest.mark.postgres
def test_a_live_connection_passes_the_check_without_sending_a_statement(own_connection: BaseDatabaseWrapper) -> None:
    pid = _backend_pid(own_connection)
    with own_connection.cursor() as cursor:
        cursor.execute("SELECT 'the last statement before the check'")

    assert own_connection.health_check_enabled
    assert own_connection.is_usable()
    assert _last_statement_of(pid) == "SELECT 'the last statement before the check'"


@pytest.mark.postgres
def test_a_connection_the_server_ended_is_replaced_before_the_next_request_uses_it(
    own_connection: BaseDatabaseWrapper,
) -> None:
    old_pid = _backend_pid(own_connection)

    _terminate(old_pid)
    _wait_until_unusable(own_connection)
    own_connection.close_if_unusable_or_obsolete()  # what Django runs when a request starts

    assert _backend_pid(own_connection) != old_pid


def _start_up(*, then: str = "", **environment: str) -> subprocess.CompletedProcess[str]:
    """Runs Django's start-up, then the code ``then``, with ``environment`` on top of this process's own."""
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {then}"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "notifyhub.settings", **environment},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _start_up_error(**environment: str) -> str:
    result = _start_up(**environment)
    assert result.returncode != 0
    return result.stderr.strip().splitlines()[-1]


POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/notifyhub"
PRINT_OPTIONS = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS'])"


def test_a_database_url_of_another_engine_stops_start_up_without_showing_its_password() -> None:
    error = _start_up_error(DATABASE_URL="mysql://notifyhub:hunter2@db.example.com/notifyhub")

    assert error == (
        "django.core.exceptions.ImproperlyConfigured: "
        "DATABASE_URL must be a sqlite:// or postgres:// URL, got mysql://..."
    )


def test_postgresql_binds_parameters_on_the_server_and_prepares_repeated_statements() -> None:
    result = _start_up(then=PRINT_OPTIONS, DATABASE_URL=POSTGRES_URL)

    assert result.stdout.strip() == "{'server_side_binding': True, 'prepare_threshold': 5}"


def test_prepared_statements_can_be_turned_off_for_a_pooler_without_them() -> None:
    result = _start_up(then=PRINT_OPTIONS, DATABASE_URL=POSTGRES_URL, DATABASE_PREPARED_STATEMENTS="false")

    assert result.stdout.strip() == "{'server_side_binding': True, 'prepare_threshold': None}"


def test_a_malformed_prepared_statements_switch_stops_start_up() -> None:
    error = _start_up_error(DATABASE_URL=POSTGRES_URL, DATABASE_PREPARED_STATEMENTS="sometimes")

    assert error == (
        "django.core.exceptions.ImproperlyConfigured: DATABASE_PREPARED_STATEMENTS must be 'true' or 'false', "
        "got 'sometimes'"
    )
