"""Pacing (core/pacing.py): turns one every 1/N seconds, each reserved for its caller, and never more than N in a
second, on Redis (one script) and in a process's memory alike (docs/customer-webhooks.md, "Rate limit")."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from django.conf import settings

from core.pacing import MemoryPacer, RedisPacer

Pacer = MemoryPacer | RedisPacer


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def pacer(request: pytest.FixtureRequest) -> Pacer:
    if request.param == "memory":
        return MemoryPacer()
    return RedisPacer(settings.REDIS_URL)  # the redis marker made sure there is one


def waits(pacer: Pacer, key: str, per_second: int) -> Callable[[str], float]:
    return lambda caller: pacer.wait_ms(key, caller, per_second=per_second)


def test_callers_at_once_get_turns_one_spacing_apart_and_take_them_when_back(pacer: Pacer) -> None:
    wait = waits(pacer, f"key-{uuid.uuid4()}", per_second=4)

    first, second, third = wait("a"), wait("b"), wait("c")

    assert first == 0
    assert second == pytest.approx(250, abs=30)
    assert third == pytest.approx(500, abs=30)
    assert wait("b") == pytest.approx(second, abs=30)  # back early: the same turn, still to come
    time.sleep(0.26)
    assert wait("b") == 0
    assert wait("d") == pytest.approx(500, abs=40)  # after c's turn, not b's again


def test_no_more_than_n_go_in_a_second_when_turns_come_back_late(pacer: Pacer) -> None:
    wait = waits(pacer, f"key-{uuid.uuid4()}", per_second=3)
    turns = {caller: wait(caller) for caller in "abcdef"}
    time.sleep(max(turns.values()) / 1000 + 0.05)  # every turn passed: all come back at once

    late = [wait(caller) for caller in "bcdef"]

    # a went long ago: b, c and d fill the second; e and f wait for it to free a place, one spacing apart.
    assert late[:3] == [0, 0, 0]
    assert late[3] == pytest.approx(1000, abs=40)
    assert late[4] - late[3] == pytest.approx(333, abs=40)


def test_keys_are_paced_apart(pacer: Pacer) -> None:
    one, other = waits(pacer, f"key-{uuid.uuid4()}", 1), waits(pacer, f"key-{uuid.uuid4()}", 1)

    assert [one("a"), other("a")] == [0, 0]
    assert one("b") > 900
