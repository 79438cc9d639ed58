"""The README's quick start, run as it is written: its commands are read from README.md, so the two cannot drift.

It runs embedded, as a fresh clone does: ``make run`` in its own var folder and on a free port, then every
command of the quick start's blocks in order, ``listen`` in the background. What a reader fills in by hand
is filled in from what came before: the API key, the job id, the URL listen printed, the port.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import pytest
import requests

from tests.conftest import free_port
from tests.servers import end_marked_processes, marked_processes
from tests.test_deploy import ROOT

HEADING = "## Quick start"
# What the README shows where a reader puts their own value.
KEY, JOB_ID, LISTEN_URL, SERVICE = "nh_...", "<jobId>", "https://127.0.0.1:8443/", "127.0.0.1:8000"
STARTUP_SECONDS = 60


def quick_start_commands() -> list[str]:
    """The commands of the ```sh blocks under the heading, continuation lines joined."""
    section = (ROOT / "README.md").read_text().split(f"\n{HEADING}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def sent_webhook(commands: list[str]) -> Any:
    """The request body of the quick start's send, as its ``curl -d`` gives it."""
    bodies = [match.group(1) for command in commands if (match := re.search(r" -d '(.*?)'", command))]
    return json.loads(bodies[0])


class QuickStart:
    """Runs the commands one by one, keeping what a reader would note down from their output."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder, self.port = folder, port
        self.env = {
            **{name: value for name, value in os.environ.items() if name not in _NOT_INHERITED},
            "NOTIFYHUB_VAR_DIR": str(folder / "var"),
            "PORT": str(port),
        }
        self.background: list[subprocess.Popen[str]] = []
        self.noted = {SERVICE: f"127.0.0.1:{port}"}
        self.listen_stdout: IO[str] | None = None
        self.listen_output: list[str] = []
        self.last_output = ""

    def run(self, command: str) -> None:
        reads_the_job = JOB_ID in command
        for placeholder, value in self.noted.items():
            command = command.replace(placeholder, value)
        if command.startswith("make run"):
            self._start_service(command)
        elif "manage.py listen" in command:
            self._start_listen(command)
        elif reads_the_job:
            self._read_until_finished(command)
        else:
            self._run_to_end(command)

    def _read_until_finished(self, command: str, tries: int = 3) -> None:
        """As a reader would, reads the job again while the worker is still recording its attempt."""
        for _ in range(tries):
            self._run_to_end(command)
            if json.loads(self.last_output)["data"]["status"] in ("completed", "failed"):
                return
            time.sleep(1)

    def _start_service(self, command: str) -> None:
        log_path = self.folder / "make-run.log"
        with log_path.open("w") as log:
            # Its metrics folder too, which the Makefile empties, is this run's own.
            service = self._spawn(f"{command} METRICS_DIR={self.folder / 'metrics'}", stdout=log)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._healthy():
            if service.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"make run did not come up:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)

    def _healthy(self) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{self.port}/api/v1/health", timeout=2).status_code == 200
        except requests.RequestException:  # not up yet
            return False

    def _start_listen(self, command: str) -> None:
        self.listen_stdout = self._spawn(command, stdout=subprocess.PIPE).stdout
        printed = self._read_listen_until("Listening for webhooks at ")
        self.noted[LISTEN_URL] = printed.split(" at ", 1)[1].split()[0]

    def _read_listen_until(self, text: str) -> str:
        """Reads listen's output up to and including the first line holding ``text``."""
        assert self.listen_stdout is not None, "the quick start sends before it starts listen"
        for line in self.listen_stdout:
            self.listen_output.append(line)
            if text in line:
                return line
        raise AssertionError(f"listen ended before printing {text!r}: {''.join(self.listen_output)}")

    def _run_to_end(self, command: str) -> None:
        done = subprocess.run(
            command, shell=True, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        self.last_output = done.stdout
        self._note(done.stdout)

    def _note(self, output: str) -> None:
        if key := re.search(r"^nh_[0-9a-f]{64}$", output, flags=re.MULTILINE):
            self.noted[KEY] = key.group()
        if '"jobId"' in output:
            job_id = json.loads(output)["data"]["jobId"]
            self.noted[JOB_ID] = job_id
            # What the reader does next: watch it arrive, before reading the job.
            self._read_listen_until(f"X-Webhook-Id: {job_id}")
            self._read_listen_until("Answered: ")

    def _spawn(self, command: str, *, stdout: Any) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            command, shell=True, cwd=ROOT, env=self.env, stdout=stdout, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.background.append(process)
        return process

    def public_urls(self) -> set[tuple[str, str]]:
        """(Procfile name, PUBLIC_URL) of each process honcho started, as their environments hold them."""
        found = set()
        for pid, _ in marked_processes(f"NOTIFYHUB_VAR_DIR={self.env['NOTIFYHUB_VAR_DIR']}"):
            with contextlib.suppress(OSError):  # it ended while we looked
                entries = Path(f"/proc/{pid}/environ").read_text().split("\0")
                environment = dict(entry.split("=", 1) for entry in entries if "=" in entry)
                if "HONCHO_PROCESS_NAME" in environment:
                    found.add((environment["HONCHO_PROCESS_NAME"], environment.get("PUBLIC_URL", "")))
        return found

    def stop(self) -> None:
        for process in reversed(self.background):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        # What honcho started, each process in a session of its own, gets a while to stop.
        end_marked_processes(f"NOTIFYHUB_VAR_DIR={self.env['NOTIFYHUB_VAR_DIR']}", grace_seconds=20)


# The quick start is a fresh clone's embedded run: none of this test run's own services or settings.
# What the suite set for itself: the quick start runs as a reader's fresh shell would, its secrets generated.
_NOT_INHERITED = {
    "DATABASE_URL",
    "REDIS_URL",
    "DEBUG",
    "DJANGO_SETTINGS_MODULE",
    "PROMETHEUS_MULTIPROC_DIR",
    "PORT",
    "SECRET_KEY",
    "FIELD_ENCRYPTION_KEY",
    "FIELD_ENCRYPTION_KEYS",
    "PUBLIC_URL",
}


@pytest.fixture
def quick_start(tmp_path: Path) -> Iterator[QuickStart]:
    run = QuickStart(tmp_path, free_port())
    try:
        yield run
    finally:
        run.stop()


@pytest.mark.timeout(120)
def test_the_readme_quick_start_shows_a_signed_webhook_arriving_and_its_job_completed(quick_start: QuickStart) -> None:
    commands = quick_start_commands()
    assert all(placeholder in " ".join(commands) for placeholder in (KEY, JOB_ID, LISTEN_URL, SERVICE)), commands

    for command in commands:
        quick_start.run(command)

    sent = sent_webhook(commands)
    delivery = "".join(quick_start.listen_output)
    assert f"POST {urlsplit(sent['url']).path}  (" in delivery
    assert f"  {json.dumps(sent['payload'], separators=(',', ':'))}\n" in delivery
    assert "X-Webhook-Signature: t=" in delivery
    assert "Signature: verified\n" in delivery
    job = json.loads(quick_start.last_output)["data"]
    assert (job["id"], job["status"]) == (quick_start.noted[JOB_ID], "completed")
    assert [(log["status"], log["responseStatus"]) for log in job["deliveryLogs"]] == [("success", 200)]
    # One address in every process, where honcho gives each its own PORT (the worker's emails linked to PORT+100).
    url = f"http://127.0.0.1:{quick_start.port}"
    assert quick_start.public_urls() == {("web.1", url), ("worker.1", url), ("beat.1", url)}
    assert (quick_start.folder / "var" / "gunicorn.ctl").is_socket()
