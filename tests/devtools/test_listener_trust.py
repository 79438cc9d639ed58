"""Local runs trust `manage.py listen` only when they are local runs, and only while listen is alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devtools.record import listener_publish
from devtools.tls import listen_dir
from notifications.delivery import trusted_target
from notifications.delivery.trusted_target import current_trusted_target
from tests.test_deploy import run


@pytest.fixture
def local_run(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    settings.VAR_DIR = tmp_path
    settings.WEBHOOK_TRUST_LISTENER = True
    settings.WEBHOOK_LOCAL_TARGET_FILE = str(tmp_path / "listen" / "listener.json")
    monkeypatch.setattr(trusted_target, "RECHECK_SECONDS", 0.0)
    listen_dir().mkdir(parents=True)
    return settings


def a_finished_process_id() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_record_left_by_a_listen_that_died_admits_nothing(local_run: Any) -> None:
    record = listen_dir() / "listener.json"
    record.write_text(
        json.dumps({"port": 4443, "pid": a_finished_process_id(), "ca_file": str(listen_dir() / "ca.pem")})
    )

    assert current_trusted_target() is None


@pytest.mark.parametrize(
    "change",
    [{"ca_file": None}, {"ca_file": 7}, {"port": "https"}, {"pid": "me"}],
    ids=["no-ca", "ca-not-a-path", "port-not-a-number", "pid-not-a-number"],
)
def test_a_record_that_does_not_say_port_process_and_ca_admits_nothing(local_run: Any, change: dict[str, Any]) -> None:
    record = {"port": 4443, "pid": os.getpid(), "ca_file": str(listen_dir() / "ca.pem"), **change}
    (listen_dir() / "listener.json").write_text(json.dumps(record))

    assert current_trusted_target() is None


def test_the_running_listen_is_admitted_and_no_longer_once_its_process_is_gone(
    local_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener_publish(port=4443, ca=listen_dir() / "ca.pem")
    admitted = current_trusted_target()
    monkeypatch.setattr(os, "getpid", a_finished_process_id)  # the record now names a process that has ended
    listener_publish(port=4443, ca=listen_dir() / "ca.pem")

    assert admitted is not None
    assert admitted.port == 4443
    assert current_trusted_target() is None


TRUST = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.WEBHOOK_TRUST_LISTENER, settings.WEBHOOK_LOCAL_TARGET_FILE is not None)"
)


@pytest.mark.parametrize(
    ("environment", "trusted"),
    [
        ({}, "True True"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/15"}, "False False"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/15", "DEBUG": "true"}, "True True"),
    ],
    ids=["embedded", "sqlite-beside-redis", "debug"],
)
def test_only_an_embedded_or_debug_run_trusts_the_listener(
    tmp_path: Path, environment: dict[str, str], trusted: str
) -> None:
    printed = run([sys.executable, "-c", TRUST], tmp_path, **environment)

    assert printed.stdout.strip() == trusted, printed.stderr
