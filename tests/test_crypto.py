"""Secrets encrypted with the newest of FIELD_ENCRYPTION_KEYS, read with any of them; the keys checked at start-up."""

from __future__ import annotations

import sys
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
from cryptography.fernet import Fernet, InvalidToken

from core.crypto import decrypt, encrypt, reencrypt
from tests.test_deploy import run

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
PRINT_KEYS = "import django; django.setup(); from django.conf import settings; print(*settings.FIELD_ENCRYPTION_KEYS)"
ENCRYPT = "import django; django.setup(); from core.crypto import encrypt; print(encrypt('s3cret'))"
NO_KEYS = {"FIELD_ENCRYPTION_KEY": "", "FIELD_ENCRYPTION_KEYS": ""}
DEPLOYMENT = {
    "REDIS_URL": "redis://127.0.0.1:6379/15",
    "SECRET_KEY": "a-deployment-secret-key-" + "k" * 40,
    "PUBLIC_URL": "https://notify.example.com",
}


def start(script: str, tmp_path: Path, **environment: str) -> CompletedProcess[str]:
    """``script`` in a new process, with no encryption key but those given (the suite's own is in the environment)."""
    return run([sys.executable, "-c", script], tmp_path, **{**NO_KEYS, **environment})


def decrypt_in_a_run(token: str, tmp_path: Path, **environment: str) -> str:
    script = f"import django; django.setup(); from core.crypto import decrypt; print(decrypt({token!r}))"
    return start(script, tmp_path, **environment).stdout.strip()


def test_a_secret_is_encrypted_with_the_newest_key(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [NEW, OLD]

    token = encrypt("s3cret")

    assert Fernet(NEW.encode()).decrypt(token.encode()) == b"s3cret"
    with pytest.raises(InvalidToken):
        Fernet(OLD.encode()).decrypt(token.encode())


def test_a_secret_under_the_old_key_stays_readable_once_a_new_key_is_put_first(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [OLD]
    token = encrypt("s3cret")

    settings.FIELD_ENCRYPTION_KEYS = [NEW, OLD]

    assert decrypt(token) == "s3cret"


def test_a_remembered_secret_is_not_read_once_its_key_is_dropped(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    token = Fernet(OLD.encode()).encrypt(b"s3cret").decode()
    assert decrypt(token) == "s3cret"

    settings.FIELD_ENCRYPTION_KEYS = [NEW]

    with pytest.raises(InvalidToken):
        decrypt(token)


def test_reencrypt_moves_a_secret_to_the_newest_key_and_leaves_one_already_there(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    under_old = Fernet(OLD.encode()).encrypt(b"s3cret").decode()

    moved = reencrypt(under_old)

    assert moved is not None
    assert Fernet(NEW.encode()).decrypt(moved.encode()) == b"s3cret"
    assert reencrypt(moved) is None


def test_reencrypt_refuses_a_secret_no_listed_key_made(settings: Any) -> None:
    settings.FIELD_ENCRYPTION_KEYS = [NEW]

    with pytest.raises(InvalidToken):
        reencrypt(Fernet(OLD.encode()).encrypt(b"s3cret").decode())


@pytest.mark.parametrize("environment", [{}, DEPLOYMENT])
def test_field_encryption_key_alone_still_works_as_the_one_key(tmp_path: Path, environment: dict[str, str]) -> None:
    started = start(ENCRYPT, tmp_path, **environment, FIELD_ENCRYPTION_KEY=OLD)

    assert Fernet(OLD.encode()).decrypt(started.stdout.strip().encode()) == b"s3cret", started.stderr
    assert not (tmp_path / "field_encryption_key").exists()


def test_a_deployment_starts_with_the_key_list_alone_newest_first(tmp_path: Path) -> None:
    started = start(
        PRINT_KEYS,
        tmp_path,
        **DEPLOYMENT,
        FIELD_ENCRYPTION_KEYS=f" {NEW}, {OLD} ",
    )

    assert started.stdout.split() == [NEW, OLD], started.stderr


def test_an_embedded_runs_generated_key_keeps_reading_once_a_new_key_is_put_first(tmp_path: Path) -> None:
    first = start(ENCRYPT, tmp_path)
    generated = (tmp_path / "field_encryption_key").read_text()

    read = decrypt_in_a_run(first.stdout.strip(), tmp_path, FIELD_ENCRYPTION_KEYS=f"{NEW},{generated}")

    assert read == "s3cret", first.stderr


def test_setting_both_stops_start_up(tmp_path: Path) -> None:
    started = start(PRINT_KEYS, tmp_path, FIELD_ENCRYPTION_KEY=OLD, FIELD_ENCRYPTION_KEYS=f"{NEW},{OLD}")

    assert started.returncode != 0
    assert (
        "Set FIELD_ENCRYPTION_KEYS or FIELD_ENCRYPTION_KEY, not both: FIELD_ENCRYPTION_KEYS lists every key, "
        "the newest first" in started.stderr
    )


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (f"{NEW},not-a-key", "FIELD_ENCRYPTION_KEYS: key 2 of 2 must be a Fernet key"),
        ("not-a-key", "FIELD_ENCRYPTION_KEYS: key 1 of 1 must be a Fernet key"),
        (" , ", "FIELD_ENCRYPTION_KEYS must list at least one Fernet key"),
    ],
)
def test_an_invalid_key_list_stops_start_up_naming_the_variable(tmp_path: Path, keys: str, message: str) -> None:
    started = start(PRINT_KEYS, tmp_path, FIELD_ENCRYPTION_KEYS=keys)

    assert started.returncode != 0
    assert message in started.stderr
    assert NEW not in started.stderr


def test_an_invalid_single_key_stops_start_up_naming_the_variable(tmp_path: Path) -> None:
    started = start(PRINT_KEYS, tmp_path, FIELD_ENCRYPTION_KEY="not-a-key")

    assert started.returncode != 0
    assert "FIELD_ENCRYPTION_KEY must be a Fernet key (32 url-safe base64-encoded bytes)" in started.stderr


def test_a_deployment_without_any_key_does_not_start(tmp_path: Path) -> None:
    started = start(PRINT_KEYS, tmp_path, **DEPLOYMENT)

    assert started.returncode != 0
    assert "FIELD_ENCRYPTION_KEYS or FIELD_ENCRYPTION_KEY must be set when REDIS_URL is" in started.stderr
    assert not (tmp_path / "field_encryption_key").exists()
