"""Local runs trust `manage.py listen` only when they are local runs, and only while listen is alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from notifications.delivery import local_listener
from notifications.delivery.local_listener import current_listener, listen_dir, listener_publish
from tests.test_deploy import run


@pytest.fixture
def local_run(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    settings.VAR_DIR = tmp_path
    settings.WEBHOOK_TRUST_LISTENER = True
    monkeypatch.setattr(local_listener, "RECHECK_SECONDS", 0.0)
    listen_dir().mkdir(parents=True)
    return settings


def a_finished_process_id() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_record_left_by_a_listen_that_died_admits_nothing(local_run: Any) -> None:
    record = listen_dir() / "listener.json"
    record.write_text(json.dumps({"port": 4443, "pid": a_finished_process_id()}))

    assert current_listener() is None


def test_the_running_listen_is_admitted_and_no_longer_once_its_process_is_gone(
    local_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener_publish(port=4443)
    admitted = current_listener()
    monkeypatch.setattr(os, "getpid", a_finished_process_id)  # the record now names a process that has ended
    listener_publish(port=4443)

    assert admitted is not None
    assert admitted.port == 4443
    assert current_listener() is None


TRUST = "import django; django.setup(); from django.conf import settings; print(settings.WEBHOOK_TRUST_LISTENER)"


@pytest.mark.parametrize(
    ("environment", "trusted"),
    [
        ({}, "True"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/15"}, "False"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/15", "DEBUG": "true"}, "True"),
    ],
    ids=["embedded", "sqlite-beside-redis", "debug"],
)
def test_only_an_embedded_or_debug_run_trusts_the_listener(
    tmp_path: Path, environment: dict[str, str], trusted: str
) -> None:
    printed = run([sys.executable, "-c", TRUST], tmp_path, **environment)

    assert printed.stdout.strip() == trusted, printed.stderr
