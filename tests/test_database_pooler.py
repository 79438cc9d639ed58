"""DATABASE_POOLER: behind PgBouncer in transaction pooling nothing is prepared and no server-side cursor is opened;
a value it does not know, or a combination that would break through the pooler, stops start-up
(docs/operations.md, "Beyond one machine"). The pooler itself is in tests/faults/test_pooler.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.test_deploy import run

# Start-up only reads the URL: nothing listens there.
POSTGRES_URL = "postgres://postgres@127.0.0.1:6432/notifyhub"
# How Django's QuerySet.iterator() reads the setting: absent is False.
PRINT_DATABASE = (
    "import django; django.setup(); from django.db import connections; "
    "database = connections['default'].settings_dict; "
    "print(database['OPTIONS']['prepare_threshold'], bool(database.get('DISABLE_SERVER_SIDE_CURSORS')))"
)


def start_up(tmp_path: Path, **environment: str) -> str:
    done = run([sys.executable, "-c", PRINT_DATABASE], tmp_path, **environment)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def start_up_error(tmp_path: Path, **environment: str) -> str:
    done = run([sys.executable, "-c", PRINT_DATABASE], tmp_path, **environment)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip().splitlines()[-1].removeprefix("django.core.exceptions.ImproperlyConfigured: ")


@pytest.mark.parametrize("prepared_statements", ["", "false"])
def test_behind_pgbouncer_nothing_is_prepared_and_no_server_side_cursor_is_opened(
    tmp_path: Path, prepared_statements: str
) -> None:
    printed = start_up(
        tmp_path,
        DATABASE_URL=POSTGRES_URL,
        DATABASE_POOLER="pgbouncer",
        DATABASE_PREPARED_STATEMENTS=prepared_statements,
    )

    assert printed == "None True"


@pytest.mark.parametrize("pooler", ["", "none"])
def test_without_a_pooler_repeated_statements_are_prepared_and_server_side_cursors_allowed(
    tmp_path: Path, pooler: str
) -> None:
    assert start_up(tmp_path, DATABASE_URL=POSTGRES_URL, DATABASE_POOLER=pooler) == "5 False"


@pytest.mark.parametrize("pooler", ["pgpool", "transaction", "PgBouncer"])
def test_a_pooler_it_does_not_know_stops_start_up_naming_the_ones_it_does(tmp_path: Path, pooler: str) -> None:
    error = start_up_error(tmp_path, DATABASE_URL=POSTGRES_URL, DATABASE_POOLER=pooler)

    assert error == (
        "DATABASE_POOLER must be 'none' (DATABASE_URL is PostgreSQL itself) or 'pgbouncer' (PgBouncer in "
        f"transaction pooling), got {pooler!r}"
    )


def test_prepared_statements_asked_for_behind_pgbouncer_stop_start_up(tmp_path: Path) -> None:
    error = start_up_error(
        tmp_path, DATABASE_URL=POSTGRES_URL, DATABASE_POOLER="pgbouncer", DATABASE_PREPARED_STATEMENTS="true"
    )

    assert error == (
        "DATABASE_PREPARED_STATEMENTS=true cannot be used with DATABASE_POOLER=pgbouncer, where a statement prepared "
        "on one server connection does not exist on the next one the pooler hands out: unset it or set it to false"
    )


def test_pgbouncer_in_front_of_sqlite_stops_start_up(tmp_path: Path) -> None:
    error = start_up_error(tmp_path, DATABASE_POOLER="pgbouncer")

    assert error == "DATABASE_POOLER=pgbouncer needs DATABASE_URL to be the pooler's postgres:// URL"
