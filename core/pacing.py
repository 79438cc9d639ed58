"""Pacing: at most N of something a second for one key, across every process, each caller told its turn
(docs/customer-webhooks.md, "Rate limit").

Two rules, both kept in one Lua script on Redis's clock, exact across worker nodes:

- **Turns.** Turns are slots on the clock, one every 1/N seconds: a caller gets the next free one, reserved for it by
  name, and comes back for it. The next free turn follows the last turn given, not the last caller that went, so a
  caller that comes back late (its task waited behind others) takes its turn late and pushes no other: the key keeps
  N a second while callers wait.
- **The window.** Whatever the turns say, a caller goes only where its going leaves at most N in every second: after
  the Nth last to go plus one second. Callers that all come back late for their turns do not go at once; they go
  one after another as the window frees places, and a caller late once pushes only the turn one second after its own.

A caller whose place is at most HOLD_MS away takes it now, logged at that time, and waits the moment where it is (a
worker, before its attempt): coming back costs a pickup that may itself be late. One further away keeps its turn and
is told to come back BACK_EARLY_MS before it, so that a pickup a little late still finds its place held.

A caller held back more than RETURN_AFTER_MS past its turn by others' places (the window full of callers that went
late) waits in line again: it is given the next free turn, its own. Told to come back for the place the window
frees, it would find it taken by a caller whose turn it is, every time while the key has a backlog, each time a
claim, a put-back and a publish for a worker.

A turn can also be reserved for a caller that has not come yet (a delivery being stored): it is kept, never taken,
until its caller asks for it.

Without Redis (the embedded run) each process keeps both in its own memory. While Redis fails, pacing fails open: a
caller goes at once, logged once per outage, and Redis is tried again every few seconds, as the API's rate limiter
does (docs/rules.md, "When a service is down").
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis
from django.conf import settings

from core.lru import BoundedLRU
from core.store_outage import StoreOutage

logger = logging.getLogger(__name__)

# A caller asks Redis once per attempt; a Redis that hangs costs it this much (as the API's rate limiter).
STORE_TIMEOUT_SECONDS = 0.25
# A caller whose place is this near takes it and waits for it where it is.
HOLD_MS = 100
# A caller held back this much past its turn by others' places, and not taking one, is given the next free turn: it
# stays held back while the key's turns are all given out (a backlog). One held back less keeps its turn: it is
# the caller one second after a late one, whose place frees itself a moment later.
RETURN_AFTER_MS = 500
# A caller told to come back does so this much before its place: a pickup up to this late (a worker's timer, a busy
# pool, the claim) still goes at its place, and one up to HOLD_MS - BACK_EARLY_MS early takes it too.
BACK_EARLY_MS = 50
WINDOW_MS = 1000
# How long a reserved turn is kept past its time for a caller that comes back late.
RESERVATION_KEPT_MS = 60_000
# The script's fourth argument: take a place at most HOLD_MS away, rather than only reserve the turn.
TAKE = "take"
# Keys a process keeps in memory without Redis: far more than the keys one process paces at once.
MEMORY_KEYS = 100_000

# KEYS: the key's log of who goes when (a sorted set, scored in ms, some ahead of now: callers holding for their
# place), its next free turn, this caller's turn.
# ARGV: N, the spacing between turns (ms), the caller's name, TAKE to take a place this near, else only reserve.
# Returns {1, ms}: the caller's place is taken, it goes in ms; {0, ms}: its place is ms away, its turn kept. A caller
# held back past its turn by more than RETURN_AFTER_MS by others' places, not taking one, is given the next free turn.
# A place is never before the last one taken, so the log is in the order of going: one second after the Nth last
# place is the first that leaves at most N in every second.
TURN_SCRIPT = f"""
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local limit, spacing = tonumber(ARGV[1]), tonumber(ARGV[2])
local next_free = tonumber(redis.call('GET', KEYS[2])) or now
local turn = tonumber(redis.call('GET', KEYS[3]))
local fresh = not turn
if fresh then
  turn = math.max(now, next_free)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - {WINDOW_MS})
local at = math.max(now, turn)
local gone = redis.call('ZRANGE', KEYS[1], -limit, -1, 'WITHSCORES')
if #gone > 0 then
  at = math.max(at, tonumber(gone[#gone]))
end
if #gone >= 2 * limit then
  at = math.max(at, tonumber(gone[2]) + {WINDOW_MS})
end
local taken = ARGV[4] == '{TAKE}' and at - now <= {HOLD_MS}
if not taken and at - turn > {RETURN_AFTER_MS} then
  turn = math.max(at, next_free)
  at = turn
  fresh = true
end
if fresh then
  redis.call('SET', KEYS[2], turn + spacing, 'PX', math.ceil(turn + spacing - now) + {WINDOW_MS})
end
if taken then
  redis.call('ZADD', KEYS[1], at, ARGV[3] .. '@' .. at)
  redis.call('PEXPIRE', KEYS[1], math.ceil(at - now) + {WINDOW_MS})
  redis.call('DEL', KEYS[3])
  return {{1, math.ceil(at - now)}}
end
redis.call('SET', KEYS[3], turn, 'PX', math.ceil(at - now) + {RESERVATION_KEPT_MS})
return {{0, math.ceil(at - now)}}
"""


@dataclass(frozen=True)
class Turn:
    """What a caller is told: ``taken``, its place is its own and it goes in ``seconds`` (at most HOLD_MS), waiting
    where it is; otherwise its turn is kept and it comes back in ``seconds``."""

    taken: bool
    seconds: float


GO_NOW = Turn(taken=True, seconds=0)


def turn(*, key: str, caller: str, per_second: int) -> Turn:
    """``caller``'s turn under ``key``'s pace of ``per_second``; a place taken is counted as gone."""
    return _pacer().turn(key, caller, per_second=per_second)


def reserve(*, key: str, caller: str, per_second: int) -> float | None:
    """Reserves ``caller``'s turn under ``key``'s pace of ``per_second`` without taking its place, for a caller that
    asks `turn` when it comes: the seconds until it should come (BACK_EARLY_MS before its place). None when nothing
    is reserved and the caller asks when it comes: the embedded run's pacer is one process's memory, which the
    caller's process does not share, and a store that fails reserves nothing."""
    return _pacer().reserve(key, caller, per_second=per_second)


def _told(taken: bool, wait_ms: float) -> Turn:
    """The turn a caller is told, ``wait_ms`` being the wait to its place: taken, or to come back a moment early."""
    if taken:
        return Turn(taken=True, seconds=wait_ms / 1000)
    return Turn(taken=False, seconds=max(0.0, wait_ms - BACK_EARLY_MS) / 1000)


class MemoryPacer:
    """The script's turns and window in one process's memory: for the embedded run, which has no Redis."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Each key's places taken, in the order of their times (a place is never before the last one taken).
        self._gone: BoundedLRU[str, deque[float]] = BoundedLRU(max_entries=MEMORY_KEYS, max_weight=MEMORY_KEYS)
        self._next_free: BoundedLRU[str, float] = BoundedLRU(max_entries=MEMORY_KEYS, max_weight=MEMORY_KEYS)
        self._turns: BoundedLRU[tuple[str, str], float] = BoundedLRU(max_entries=MEMORY_KEYS, max_weight=MEMORY_KEYS)

    def turn(self, key: str, caller: str, *, per_second: int) -> Turn:
        now, spacing = time.time() * 1000, 1000 / per_second
        with self._lock:
            next_free = self._next_free.get(key) or now
            turn = self._turns.get((key, caller))
            fresh = turn is None
            if turn is None:
                turn = max(now, next_free)
            gone = self._gone.get(key) or deque()
            while gone and gone[0] <= now - WINDOW_MS:
                gone.popleft()
            at = max(now, turn, gone[-1] if gone else now)
            if len(gone) >= per_second:
                at = max(at, gone[-per_second] + WINDOW_MS)
            taken = at - now <= HOLD_MS
            if not taken and at - turn > RETURN_AFTER_MS:
                turn = at = max(at, next_free)
                fresh = True
            if fresh:
                self._next_free.put(key, turn + spacing, weight=1)
            if not taken:
                self._turns.put((key, caller), turn, weight=1)
                return _told(False, at - now)
            gone.append(at)
            self._gone.put(key, gone, weight=1)
            self._turns.discard((key, caller))
            return _told(True, at - now)

    def reserve(self, key: str, caller: str, *, per_second: int) -> float | None:
        return None


class RedisPacer:
    """The schedule in Redis, one script a turn; while Redis fails, every caller goes at once."""

    def __init__(self, url: str) -> None:
        client = redis.Redis.from_url(
            url, socket_timeout=STORE_TIMEOUT_SECONDS, socket_connect_timeout=STORE_TIMEOUT_SECONDS
        )
        self._script: Any = client.register_script(TURN_SCRIPT)
        # While it fails, Redis is asked again by one caller every few seconds; the others go through unpaced.
        self._outage = StoreOutage(
            logger,
            down="Pacing store unavailable (%s); rate-limited endpoints are not paced until it answers",
            back="Pacing store answers again after %.1fs; pacing there again",
        )

    def turn(self, key: str, caller: str, *, per_second: int) -> Turn:
        told = self._ask(key, caller, per_second=per_second, take=True)
        return GO_NOW if told is None else told

    def reserve(self, key: str, caller: str, *, per_second: int) -> float | None:
        told = self._ask(key, caller, per_second=per_second, take=False)
        return None if told is None else told.seconds

    def _ask(self, key: str, caller: str, *, per_second: int, take: bool) -> Turn | None:
        """What the script tells the caller; None while the store fails."""
        if not self._outage.store_due():
            return None
        keys = [f"pace:{key}:gone", f"pace:{key}:next", f"pace:{key}:turn:{caller}"]
        try:
            taken, wait_ms = self._script(keys=keys, args=[per_second, 1000 / per_second, caller, TAKE if take else ""])
        except redis.RedisError as error:
            self._outage.failed(error)
            return None
        self._outage.answered()
        return _told(bool(taken), float(wait_ms))


@cache
def _pacer() -> MemoryPacer | RedisPacer:
    return RedisPacer(settings.REDIS_URL) if settings.REDIS_URL else MemoryPacer()
