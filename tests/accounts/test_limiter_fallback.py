"""The rate limit while its Redis is down: each process limits in memory, then goes back to Redis.

Each test runs a redis-server of its own, so stopping it touches nobody else's data.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client import REGISTRY

from accounts import throttle
from tests.conftest import Client, _unavailable, free_port

FALLBACKS = "notifyhub_rate_limiter_fallbacks_total"
# A request through the test client takes a few milliseconds; one that waited on a dead Redis would take seconds.
FAST_SECONDS = 0.2


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


@pytest.fixture
def private_redis(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[RedisServer]:
    """The rate limiter's store is this redis-server; the store is tried again 0.3 s after a failure."""
    if shutil.which("redis-server") is None:
        _unavailable("needs redis-server on PATH")
    server = RedisServer(tmp_path)
    server.start()
    settings.RATELIMIT_STORAGE_URL = server.url
    monkeypatch.setattr(throttle, "STORE_RETRY_SECONDS", 0.3)
    throttle._limiter.cache_clear()
    try:
        yield server
    finally:
        throttle._limiter.cache_clear()
        server.stop()


def timed_pings(client: Client, count: int) -> tuple[list[int], list[float]]:
    statuses, seconds = [], []
    for _ in range(count):
        started = time.monotonic()
        statuses.append(client.get("/api/v1/ping").status_code)
        seconds.append(time.monotonic() - started)
    return statuses, seconds


def hits_in_redis(server: RedisServer) -> int:
    client = server.client()
    return sum(int(client.llen(key)) for key in client.keys("LIMITS:*"))


def fallbacks() -> float:
    return REGISTRY.get_sample_value(FALLBACKS) or 0.0


def test_with_redis_stopped_the_limit_holds_in_memory_then_redis_takes_over_again(
    free: Client, private_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="accounts.throttle")
    assert timed_pings(free, 6)[0] == [200] * 5 + [429]
    assert hits_in_redis(private_redis) == 5
    fallbacks_before = fallbacks()

    private_redis.stop()
    statuses, seconds = timed_pings(free, 6)

    # Memory starts this process's own window: the plan's 5, then 429.
    assert statuses == [200] * 5 + [429]
    assert max(seconds) < FAST_SECONDS, seconds
    assert caplog.text.count("Rate limiter store unavailable") == 1
    assert fallbacks() == fallbacks_before + 1

    private_redis.start()
    time.sleep(0.35)
    statuses, _ = timed_pings(free, 6)

    # The restarted Redis is empty: memory, which holds 5 hits this minute, would have refused the first.
    assert statuses == [200] * 5 + [429]
    assert hits_in_redis(private_redis) == 5
    assert caplog.text.count("Rate limiter store answers again") == 1
    assert caplog.text.count("Rate limiter store unavailable") == 1


def test_a_hung_redis_costs_one_request_the_timeout_every_retry_interval(
    free: Client, private_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    free.get("/api/v1/ping")

    private_redis.pause()
    statuses, seconds = timed_pings(free, 5)
    time.sleep(0.35)
    statuses_after_interval, seconds_after_interval = timed_pings(free, 1)

    assert statuses + statuses_after_interval == [200] * 5 + [429]
    # The first request waits out the store's timeout; the others within the interval ask memory only.
    assert throttle.STORE_TIMEOUT_SECONDS <= seconds[0] < throttle.STORE_TIMEOUT_SECONDS + FAST_SECONDS
    assert max(seconds[1:]) < FAST_SECONDS, seconds
    # The next request after the interval tries the store again, and waits out the timeout again.
    assert throttle.STORE_TIMEOUT_SECONDS <= seconds_after_interval[0] < throttle.STORE_TIMEOUT_SECONDS + FAST_SECONDS
    assert caplog.text.count("Rate limiter store unavailable") == 1
