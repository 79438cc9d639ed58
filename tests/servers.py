"""Real servers a test starts, and may stop, of its own: nobody else's data is touched; and the processes a test
started, found again by a marker in their environment."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from tests.conftest import free_port


class RedisServer:
    """A redis-server on a port of its own, without persistence, that a test may stop, pause and start again."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        log = (self.directory / "redis.log").open("ab")
        self._process = subprocess.Popen(command, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client().ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
        if self._process is not None:
            self.resume()
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None

    def pause(self) -> None:
        """The process stays, its port still accepts connections, and nothing answers: a hung Redis."""
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGCONT)


def marked_processes(marker: str) -> Iterator[tuple[int, list[str]]]:
    """(pid, argv) of the live processes whose environment holds ``marker`` (``NAME=value``; a zombie shows none)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # it ended while we looked, or it is not ours to read
        yield int(entry.name), argv


def end_marked_processes(marker: str, *, grace_seconds: float = 0.0, kill_seconds: float = 10.0) -> None:
    """Gives the processes holding ``marker`` ``grace_seconds`` to end on their own, then kills what is left,
    trying for at most ``kill_seconds``."""
    deadline = time.monotonic() + grace_seconds
    while any(marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    deadline = time.monotonic() + kill_seconds
    while (left := [pid for pid, _ in marked_processes(marker)]) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
