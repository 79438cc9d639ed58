"""``manage.py listen``: its receiver, and the one exception local runs make for it in the address rule."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import trustme
from django.core.management import CommandError, call_command

from core.signing import signature_header, standard_signature_header
from devtools.listener import DEFAULT_PORT, ListenServer, listener_url, printer
from devtools.record import listener_publish, listener_withdraw
from devtools.tls import listen_dir, tls_files
from notifications.delivery import trusted_target
from notifications.delivery.trusted_target import TrustedTarget, current_trusted_target
from notifications.delivery.webhook import send
from tests.api.test_envelope import assert_error
from tests.conftest import Client
from tests.fakes.receiver import Receiver
from tests.test_deploy import ROOT

LOCAL_URL_MESSAGE = "url must not point to a local or private network address"
NON_PUBLIC_MESSAGE = "Refused: the URL resolves to a non-public address"
BODY = b'{"hello":"world"}'


@pytest.fixture
def local_run(settings: Any, tmp_path: Path) -> Any:
    """A run for trying things (SQLite or DEBUG), with a var folder of its own."""
    settings.VAR_DIR = tmp_path
    settings.WEBHOOK_TRUST_LISTENER = True
    settings.WEBHOOK_LOCAL_TARGET_FILE = str(tmp_path / "listen" / "listener.json")
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    settings.WEBHOOK_CA_BUNDLE = None
    return settings


def as_in_production(settings: Any) -> None:
    """What a production configuration's settings say: listen is not trusted, and no local target is looked for."""
    settings.WEBHOOK_TRUST_LISTENER = False
    settings.WEBHOOK_LOCAL_TARGET_FILE = None


@pytest.fixture
def listening(local_run: Any, ca: trustme.CA, receiver: Receiver) -> Receiver:
    """The test receiver standing in for a running listen: its port and CA published as listen publishes its own."""
    listen_dir().mkdir(parents=True)
    ca_file = listen_dir() / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    listener_publish(port=receiver.port, ca=ca_file)
    return receiver


def test_a_local_run_accepts_a_send_to_the_running_listener_and_no_other_local_address(
    free: Client, listening: Receiver
) -> None:
    assert free.send_webhook(url=listening.url("/")).status_code == 202
    assert_error(free.send_webhook(url=f"https://127.0.0.1:{listening.port + 1}/"), 400, LOCAL_URL_MESSAGE)
    assert_error(free.send_webhook(url=f"https://localhost:{listening.port}/"), 400, LOCAL_URL_MESSAGE)
    assert_error(free.send_webhook(url="https://10.0.0.5/hook"), 400, LOCAL_URL_MESSAGE)


def test_a_local_run_refuses_the_listeners_address_once_it_stopped(free: Client, listening: Receiver) -> None:
    listener_withdraw()

    assert_error(free.send_webhook(url=listening.url("/")), 400, LOCAL_URL_MESSAGE)


def test_a_production_configuration_refuses_the_listeners_address_while_it_runs(
    free: Client, listening: Receiver, settings: Any
) -> None:
    as_in_production(settings)

    assert_error(free.send_webhook(url=listening.url("/")), 400, LOCAL_URL_MESSAGE)


def test_the_webhook_client_delivers_to_the_listener_trusting_its_ca(listening: Receiver) -> None:
    outcome = send("POST", listening.url("/in"), body=BODY, headers={})

    assert (outcome.delivered, outcome.response_status) == (True, 200)
    assert [(arrival.path, arrival.body) for arrival in listening.wait_for(1)] == [("/in", BODY)]


def test_the_webhook_client_refuses_other_loopback_ports_while_the_listener_runs(
    listening: Receiver, ca: trustme.CA
) -> None:
    with Receiver(ca) as other:
        outcome = send("POST", other.url(), body=BODY, headers={})

        assert outcome.error_message == NON_PUBLIC_MESSAGE
        assert "127.0.0.1" not in outcome.error_message
        assert other.arrivals == []


def test_the_webhook_client_refuses_the_listener_in_a_production_configuration(
    listening: Receiver, settings: Any
) -> None:
    as_in_production(settings)

    outcome = send("POST", listening.url(), body=BODY, headers={})

    assert outcome.error_message == NON_PUBLIC_MESSAGE
    assert "127.0.0.1" not in outcome.error_message
    assert listening.arrivals == []


def test_a_listener_started_later_is_seen_at_the_next_check_and_not_before(
    local_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trusted_target, "RECHECK_SECONDS", 3600.0)
    assert current_trusted_target() is None
    listen_dir().mkdir(parents=True)
    listener_publish(port=4443, ca=listen_dir() / "ca.pem")

    assert current_trusted_target() is None  # no look at the file between checks
    monkeypatch.setattr(trusted_target, "RECHECK_SECONDS", 0.0)
    assert current_trusted_target() == TrustedTarget(
        port=4443,
        ca_file=str(listen_dir() / "ca.pem"),
        started_ns=Path(local_run.WEBHOOK_LOCAL_TARGET_FILE).stat().st_mtime_ns,
        pid=os.getpid(),
    )


def test_listen_publishes_nothing_where_no_local_target_is_looked_for(local_run: Any) -> None:
    as_in_production(local_run)

    listener_publish(port=4443, ca=listen_dir() / "ca.pem")

    assert not listen_dir().exists()


def test_listen_makes_its_ca_once_and_keeps_no_key_of_it(tmp_path: Path) -> None:
    first = tls_files(tmp_path)
    ca_pem = first.ca.read_bytes()

    assert tls_files(tmp_path) == first
    assert first.ca.read_bytes() == ca_pem
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ca.pem", "cert.pem", "key.pem"]
    assert first.key.stat().st_mode & 0o777 == 0o600


@pytest.fixture
def listen_server(tmp_path: Path) -> Iterator[Callable[..., tuple[ListenServer, list[str]]]]:
    """Starts listen's receiver in a thread; returns it and what it printed."""
    servers: list[ListenServer] = []

    def start(*, secret: str | None = None, status: int = 200, port: int | None = 0) -> tuple[ListenServer, list[str]]:
        printed: list[str] = []
        server = ListenServer(
            port=port, tls=tls_files(tmp_path), on_arrival=printer(printed.append, secret=secret, status=status)
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server, printed

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _post(server: ListenServer, tmp_path: Path, **headers: str) -> requests.Response:
    ca = str(tmp_path / "ca.pem")
    return requests.post(listener_url(server.port) + "hook", data=BODY, headers=headers, verify=ca)


def test_listen_prints_a_delivery_with_its_signature_verified(
    listen_server: Callable[..., tuple[ListenServer, list[str]]], tmp_path: Path
) -> None:
    server, printed = listen_server(secret="whsec_right")
    signature = signature_header("whsec_right", int(time.time()), BODY)

    response = _post(server, tmp_path, **{"X-Webhook-Id": "job-1", "X-Webhook-Signature": signature})

    assert response.status_code == 200
    lines = printed[0].splitlines()
    assert lines[0] == ""  # each delivery after a blank line
    assert lines[1].startswith("POST /hook  (")
    assert {"  X-Webhook-Id: job-1", f"  X-Webhook-Signature: {signature}", '  {"hello":"world"}'} <= set(lines)
    assert lines[-2:] == ["  Signature: verified", "  Answered: 200"]


def test_listen_checks_the_standard_webhooks_signature_too_and_says_which_passed(
    listen_server: Callable[..., tuple[ListenServer, list[str]]], tmp_path: Path
) -> None:
    secret = "whsec_" + "ab" * 32
    server, printed = listen_server(secret=secret)
    now = int(time.time())
    signed = {
        "X-Webhook-Signature": signature_header(secret, now, BODY),
        "webhook-id": "job-1",
        "webhook-timestamp": str(now),
        "webhook-signature": standard_signature_header(secret, "job-1", now, BODY),
    }

    _post(server, tmp_path, **signed)
    _post(server, tmp_path, **{**signed, "webhook-id": "job-2"})  # the id swapped: only the standard one covers it

    assert printed[0].splitlines()[-3:] == [
        "  Signature: verified",
        "  Standard Webhooks signature: verified",
        "  Answered: 200",
    ]
    assert printed[1].splitlines()[-3:] == [
        "  Signature: verified",
        "  Standard Webhooks signature: DOES NOT VERIFY"
        " (another secret, an altered body or id, or older than 5 minutes)",
        "  Answered: 200",
    ]


@pytest.mark.parametrize(
    ("secret", "signed_with", "verdict"),
    [
        ("whsec_right", "whsec_wrong", "DOES NOT VERIFY (another secret, an altered body, or older than 5 minutes)"),
        ("whsec_right", None, "none, the delivery is unsigned (its account has no signing secret)"),
        (None, "whsec_right", "not checked (give listen --account EMAIL or --secret SECRET)"),
    ],
)
def test_listen_says_when_a_signature_does_not_verify_or_cannot_be_checked(
    listen_server: Callable[..., tuple[ListenServer, list[str]]],
    tmp_path: Path,
    secret: str | None,
    signed_with: str | None,
    verdict: str,
) -> None:
    server, printed = listen_server(secret=secret)
    headers = {"X-Webhook-Signature": signature_header(signed_with, int(time.time()), BODY)} if signed_with else {}

    _post(server, tmp_path, **headers)

    assert f"  Signature: {verdict}" in printed[0].splitlines()


def test_listen_answers_every_delivery_with_the_status_asked(
    listen_server: Callable[..., tuple[ListenServer, list[str]]], tmp_path: Path
) -> None:
    server, printed = listen_server(status=503)

    assert _post(server, tmp_path).status_code == 503
    assert printed[0].splitlines()[-1] == "  Answered: 503"


def test_listen_takes_a_free_port_when_the_default_one_is_taken(
    listen_server: Callable[..., tuple[ListenServer, list[str]]],
) -> None:
    with socket.socket() as taken:
        # Listening, and bound even while a connection of an earlier listen lingers in TIME_WAIT: listen's own
        # socket (SO_REUSEADDR) could otherwise share the port with it.
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # taken already, by someone else
            taken.bind(("127.0.0.1", DEFAULT_PORT))
            taken.listen()

        server, _ = listen_server(port=None)

    assert server.port not in (DEFAULT_PORT, 0)


def test_listen_refuses_a_production_configuration(settings: Any) -> None:
    as_in_production(settings)

    with pytest.raises(CommandError, match="production configuration"):
        call_command("listen")


def test_listen_publishes_itself_while_it_runs_and_withdraws_when_stopped(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL", "DEBUG")}
    env.update(DJANGO_SETTINGS_MODULE="notifyhub.settings", NOTIFYHUB_VAR_DIR=str(tmp_path))
    command = [sys.executable, "manage.py", "listen", "--secret", "whsec_x", "--port", "0"]
    listen = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert listen.stdout is not None
        assert listen.stdout.readline() == "Signatures are checked with the secret given.\n"
        url = listen.stdout.readline().split(" at ", 1)[1].split()[0]
        record = tmp_path / "listen" / "listener.json"
        assert url == listener_url(json.loads(record.read_text())["port"])
    finally:
        listen.send_signal(signal.SIGTERM)
        assert listen.wait(timeout=15) == 0
    assert not record.exists()
