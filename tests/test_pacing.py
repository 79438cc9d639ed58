"""Pacing (core/pacing.py): turns on the clock one every 1/N seconds, each reserved for its caller, never more than N
in a second, and a caller late for its turn pushing no later one; on Redis (one script) and in a process's memory
alike (docs/customer-webhooks.md, "Rate limit")."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence

import pytest
import redis
from django.conf import settings

from core.pacing import BACK_EARLY_MS, HOLD_MS, RETURN_AFTER_MS, MemoryPacer, RedisPacer, Turn

Pacer = MemoryPacer | RedisPacer


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def pacer(request: pytest.FixtureRequest) -> Pacer:
    if request.param == "memory":
        return MemoryPacer()
    return RedisPacer(settings.REDIS_URL)  # the redis marker made sure there is one


def turns(pacer: Pacer, key: str, per_second: int) -> Callable[[str], Turn]:
    return lambda caller: pacer.turn(key, caller, per_second=per_second)


def back_in(ms: float) -> float:
    """The seconds a caller whose place is ``ms`` away is told to come back in."""
    return (ms - BACK_EARLY_MS) / 1000


def test_callers_at_once_get_turns_one_spacing_apart_and_take_them_when_back(pacer: Pacer) -> None:
    turn = turns(pacer, f"key-{uuid.uuid4()}", per_second=4)

    first, second, third = turn("a"), turn("b"), turn("c")

    assert first == Turn(taken=True, seconds=0)
    assert (second.taken, second.seconds) == (False, pytest.approx(back_in(250), abs=0.03))
    assert (third.taken, third.seconds) == (False, pytest.approx(back_in(500), abs=0.03))
    assert turn("b").seconds == pytest.approx(second.seconds, abs=0.03)  # back early: the same turn, still to come
    time.sleep(second.seconds)
    back = turn("b")  # back when told: its place held, a moment away
    assert back.taken
    assert back.seconds <= BACK_EARLY_MS / 1000
    # After c's turn, not b's again: 750 ms from the first ask, b's wait since gone.
    assert turn("d").seconds == pytest.approx(back_in(750) - second.seconds, abs=0.04)


def test_no_more_than_n_go_in_a_second_when_turns_come_back_late(pacer: Pacer) -> None:
    turn = turns(pacer, f"key-{uuid.uuid4()}", per_second=3)
    told = {caller: turn(caller) for caller in "abcdef"}
    time.sleep(max(t.seconds for t in told.values()) + 0.3)  # every turn passed: all come back at once

    late = [turn(caller) for caller in "bcdef"]

    # a went long ago: b, c and d fill the second; e and f wait for it to free a place, one after the other.
    assert late[:3] == [Turn(taken=True, seconds=0)] * 3
    assert [t.taken for t in late[3:]] == [False, False]
    assert late[3].seconds == pytest.approx(back_in(1000), abs=0.04)
    # Held back past their turns, each is given a turn of its own, in line again: f one spacing after e, not the
    # same place to contend for.
    assert late[4].seconds == pytest.approx(late[3].seconds + 1 / 3, abs=0.005)


def test_keys_are_paced_apart(pacer: Pacer) -> None:
    one, other = turns(pacer, f"key-{uuid.uuid4()}", 1), turns(pacer, f"key-{uuid.uuid4()}", 1)

    assert [one("a").taken, other("a").taken] == [True, True]
    assert one("b").seconds > 0.9 - BACK_EARLY_MS / 1000


@pytest.mark.redis
def test_two_workers_keep_n_a_second_and_a_late_taker_pushes_no_later_turn() -> None:
    """Two workers (a Redis client each) take 40 callers' turns at 10 a second, as a worker does: a place near is
    waited for where it is, one further is come back for when told; one caller comes back 250 ms late. The places are
    read from the script's log, on Redis's clock (a thread's sleep on a busy machine lands late by its own)."""
    key, per_second, callers = f"key-{uuid.uuid4()}", 10, [f"job-{n}" for n in range(40)]
    late = callers[12]
    log, log_key = redis.Redis.from_url(settings.REDIS_URL), f"pace:{key}:gone"
    places: dict[str, float] = {}

    def work(pacer: RedisPacer, mine: Sequence[str]) -> None:
        for caller in mine:
            while not (turn := pacer.turn(key, caller, per_second=per_second)).taken:
                time.sleep(turn.seconds + (0.25 if caller == late else 0))
            # The log keeps a second's places: this caller's is there until a second after it.
            places.update(
                (member.decode(), score / 1000) for member, score in log.zrange(log_key, 0, -1, withscores=True)
            )
            time.sleep(turn.seconds)

    # Each worker asks for its callers in turn, the two interleaved, as two workers claim a queue's deliveries.
    workers = [
        threading.Thread(target=work, args=(RedisPacer(settings.REDIS_URL), callers[start::2])) for start in (0, 1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)

    gone = sorted(places.values())
    assert sorted(member.split("@")[0] for member in places) == sorted(callers)
    assert max(in_any_second(gone)) <= per_second
    # 40 turns at 10 a second: the last goes 3.9 s after the first, the late caller's 250 ms not added to it.
    assert gone[-1] - gone[0] == pytest.approx(3.9, abs=0.05)
    full_seconds = [count for start, count in zip(gone, in_any_second(gone), strict=True) if start <= gone[-1] - 1]
    assert min(full_seconds) >= per_second - 1


def test_a_place_a_moment_away_is_taken_and_waited_for(pacer: Pacer) -> None:
    turn = turns(pacer, f"key-{uuid.uuid4()}", per_second=20)  # turns 50 ms apart, nearer than HOLD_MS

    assert [turn(caller) for caller in "ab"] == [Turn(True, 0), Turn(True, pytest.approx(0.05, abs=0.01))]
    assert HOLD_MS > 50
    assert turn("c") == Turn(True, pytest.approx(0.1, abs=0.01))
    assert turn("d").taken is False


def test_a_caller_held_back_past_its_turn_is_given_the_next_free_turn_not_told_to_contend(pacer: Pacer) -> None:
    turn = turns(pacer, f"key-{uuid.uuid4()}", per_second=2)  # turns 500 ms apart
    start = time.monotonic()

    def at(seconds: float) -> None:
        time.sleep(max(0.0, start + seconds - time.monotonic()))

    assert turn("a").taken
    assert [turn(caller).taken for caller in "bcd"] == [False] * 3  # turns at 500, 1000 and 1500 ms; next 2000
    at(1.2)
    assert turn("b") == Turn(taken=True, seconds=0)  # 700 ms late, it goes at 1200
    at(1.6)
    assert turn("c") == Turn(taken=True, seconds=0)  # 600 ms late: c and b fill the second from 1200
    # d, 100 ms late, is held back to 2200 by the window, past RETURN_AFTER_MS: it is given the next free turn,
    # 2200, its own; the next caller's comes after it, not at the place d would otherwise contend for.
    assert RETURN_AFTER_MS < 2200 - 1500  # held back 700 ms past its turn
    assert turn("d") == Turn(taken=False, seconds=pytest.approx(back_in(600), abs=0.04))
    assert turn("e") == Turn(taken=False, seconds=pytest.approx(back_in(1100), abs=0.04))


@pytest.mark.redis
def test_a_turn_reserved_ahead_is_kept_for_its_caller_untaken_and_taken_when_it_comes() -> None:
    pacer, key = RedisPacer(settings.REDIS_URL), f"key-{uuid.uuid4()}"
    turn = turns(pacer, key, per_second=4)

    # Reserved for callers still to come (deliveries being stored): a now, b 250 ms on; neither place taken.
    assert pacer.reserve(key, "a", per_second=4) == 0
    assert pacer.reserve(key, "b", per_second=4) == pytest.approx(back_in(250), abs=0.03)
    assert redis.Redis.from_url(settings.REDIS_URL).zcard(f"pace:{key}:gone") == 0

    # c, asking now, comes after them; a, come, takes its turn; b, come when told, takes its.
    assert turn("c") == Turn(taken=False, seconds=pytest.approx(back_in(500), abs=0.03))
    assert turn("a") == Turn(taken=True, seconds=0)
    time.sleep(back_in(250))
    back = turn("b")
    assert back.taken
    assert back.seconds <= BACK_EARLY_MS / 1000


def test_a_pacer_in_one_processs_memory_reserves_nothing_for_another() -> None:
    pacer = MemoryPacer()

    assert pacer.reserve("key", "a", per_second=1) is None
    assert pacer.reserve("key", "b", per_second=1) is None
    assert [pacer.turn("key", caller, per_second=1).taken for caller in "ab"] == [True, False]


def in_any_second(times: Sequence[float]) -> list[int]:
    """How many of ``times`` fall in the second that starts at each of them."""
    return [sum(1 for other in times if start <= other < start + 1) for start in times]
