"""The secrets NotifyHub needs: generated once, owner-only, into var/ for an embedded run; required of a deployment."""

from __future__ import annotations

import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.test_deploy import run

PRINT_SECRETS = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.SECRET_KEY); print(*settings.FIELD_ENCRYPTION_KEYS)"
)
WITHOUT_SECRETS = {"SECRET_KEY": "", "FIELD_ENCRYPTION_KEY": "", "FIELD_ENCRYPTION_KEYS": "", "PUBLIC_URL": ""}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_embedded_run_generates_its_secrets_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    first = run([sys.executable, "-c", PRINT_SECRETS], tmp_path, **WITHOUT_SECRETS)
    again = run([sys.executable, "-c", PRINT_SECRETS], tmp_path, **WITHOUT_SECRETS)

    secret_key, encryption_key = first.stdout.split()
    assert again.stdout == first.stdout, first.stderr
    Fernet(encryption_key.encode())
    assert (tmp_path / "secret_key").read_text() == secret_key
    assert mode(tmp_path / "secret_key") == mode(tmp_path / "field_encryption_key") == 0o600
    assert not [path.name for path in tmp_path.iterdir() if "partial" in path.name]


def test_processes_starting_together_all_keep_the_same_secrets(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=6) as pool:
        printed = list(
            pool.map(lambda _: run([sys.executable, "-c", PRINT_SECRETS], tmp_path, **WITHOUT_SECRETS), range(6))
        )

    assert {result.stdout for result in printed} == {
        (tmp_path / "secret_key").read_text() + "\n" + (tmp_path / "field_encryption_key").read_text() + "\n"
    }


def test_the_database_and_the_outbox_are_the_owners_alone(tmp_path: Path) -> None:
    run([sys.executable, "-c", PRINT_SECRETS], tmp_path, **WITHOUT_SECRETS)

    assert mode(tmp_path) == 0o700
    assert mode(tmp_path / "db.sqlite3") == 0o600
    assert mode(tmp_path / "outbox") == 0o700


@pytest.mark.parametrize("missing", ["SECRET_KEY", "FIELD_ENCRYPTION_KEY", "PUBLIC_URL"])
def test_a_deployment_missing_a_secret_or_its_public_url_does_not_start(tmp_path: Path, missing: str) -> None:
    given = {
        "SECRET_KEY": "a-deployment-secret-key-" + "k" * 40,
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "PUBLIC_URL": "https://notify.example.com",
    }
    started = run(
        [sys.executable, "-c", PRINT_SECRETS], tmp_path, REDIS_URL="redis://127.0.0.1:6379/15", **{**given, missing: ""}
    )

    assert started.returncode != 0
    assert f"{missing} must be set when REDIS_URL is" in started.stderr
    assert not (tmp_path / "secret_key").exists()
    assert not (tmp_path / "field_encryption_key").exists()
