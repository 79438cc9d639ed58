"""Real servers a test starts, and may stop, of its own: nobody else's data is touched."""

from __future__ import annotations

import os
import signal
import subprocess
import time
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
