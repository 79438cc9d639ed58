"""The rate limit while its Redis is down: each process limits in memory, then goes back to Redis.

Each test runs a redis-server of its own, so stopping it touches nobody else's data.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from accounts import throttle
from core import store_outage
from tests.conftest import Client, _unavailable
from tests.servers import RedisServer

FALLBACKS = "notifyhub_rate_limiter_fallbacks_total"
# A request through the test client takes a few milliseconds; one that waited on a dead Redis would take seconds.
FAST_SECONDS = 0.2


@pytest.fixture
def private_redis(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[RedisServer]:
    """The rate limiter's store is this redis-server; the store is tried again 0.3 s after a failure."""
    if shutil.which("redis-server") is None:
        _unavailable("needs redis-server on PATH")
    server = RedisServer(tmp_path)
    server.start()
    settings.RATELIMIT_STORAGE_URL = server.url
    monkeypatch.setattr(store_outage, "STORE_RETRY_SECONDS", 0.3)
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
