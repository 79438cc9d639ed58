"""Pacing: at most N of something a second for one key, across every process, each caller told its turn
(docs/customer-webhooks.md, "Rate limit").

Two rules, both kept in one Lua script on Redis's clock, exact across worker nodes:

- **Turns.** A caller gets the next free turn, one every 1/N seconds, reserved for it by name; it comes back then
  and goes. Callers that wait are served in the order they asked, each told a turn no other takes, so a burst of
  them is spread evenly instead of all trying again at once.
- **The window.** Whatever the turns say, a caller goes only while fewer than N went in the second before (a log
  of who went when, as the API's rate limiter keeps): callers that came back late for their turns (their tasks
  waited behind others) do not all go at once. One refused is given the next free turn once the window frees a
  place, so those refused together are spread again.

Without Redis (the embedded run) each process keeps both in its own memory. While Redis fails, pacing fails open: a
caller goes at once, logged once per outage, and Redis is tried again every few seconds, as the API's rate limiter
does (docs/rules.md, "When a service is down").
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from functools import cache
from typing import Any

import redis
from django.conf import settings

from core.lru import BoundedLRU
from core.store_outage import StoreOutage

logger = logging.getLogger(__name__)

# A caller asks Redis once per attempt; a Redis that hangs costs it this much (as the API's rate limiter).
STORE_TIMEOUT_SECONDS = 0.25
# A caller back this little before its turn (its countdown and Redis's clock differ a little) takes it.
EARLY_MS = 10
WINDOW_MS = 1000
# How long a reserved turn is kept past its time for a caller that comes back late.
RESERVATION_KEPT_MS = 60_000
# Keys a process keeps in memory without Redis: far more than the keys one process paces at once.
MEMORY_KEYS = 100_000

# KEYS: the key's log of who went when (a sorted set, scored in ms), its next free turn, this caller's turn.
# ARGV: N, the spacing between turns (ms), how early a turn may be taken (ms), the caller's name.
# Returns how many ms the caller waits: 0, go now.
TURN_SCRIPT = f"""
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local limit, spacing, early = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local turn = tonumber(redis.call('GET', KEYS[3]))
if not turn then
  turn = math.max(now, tonumber(redis.call('GET', KEYS[2])) or now)
  redis.call('SET', KEYS[2], turn + spacing, 'PX', math.ceil(turn + spacing - now) + {WINDOW_MS})
end
if turn - now <= early then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - {WINDOW_MS})
  if redis.call('ZCARD', KEYS[1]) < limit then
    redis.call('ZADD', KEYS[1], now, ARGV[4] .. '@' .. now)
    redis.call('PEXPIRE', KEYS[1], {WINDOW_MS})
    redis.call('DEL', KEYS[3])
    return 0
  end
  local freed = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]) + {WINDOW_MS}
  turn = math.max(freed, tonumber(redis.call('GET', KEYS[2])) or freed)
  redis.call('SET', KEYS[2], turn + spacing, 'PX', math.ceil(turn + spacing - now) + {WINDOW_MS})
end
redis.call('SET', KEYS[3], turn, 'PX', math.ceil(turn - now) + {RESERVATION_KEPT_MS})
return turn - now
"""


def seconds_to_turn(*, key: str, caller: str, per_second: int) -> float:
    """Seconds ``caller`` waits before its turn under ``key``'s pace of ``per_second``: 0, go now (counted as gone);
    otherwise the turn is reserved for it, and asking again at that time takes it."""
    return _pacer().wait_ms(key, caller, per_second=per_second) / 1000


class MemoryPacer:
    """The script's turns and window in one process's memory: for the embedded run, which has no Redis."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gone: BoundedLRU[str, deque[float]] = BoundedLRU(max_entries=MEMORY_KEYS, max_weight=MEMORY_KEYS)
        self._next_free: BoundedLRU[str, float] = BoundedLRU(max_entries=MEMORY_KEYS, max_weight=MEMORY_KEYS)
        self._turns: BoundedLRU[tuple[str, str], float] = BoundedLRU(max_entries=MEMORY_KEYS, max_weight=MEMORY_KEYS)

    def wait_ms(self, key: str, caller: str, *, per_second: int) -> float:
        now = time.time() * 1000
        with self._lock:
            turn = self._turns.get((key, caller))
            if turn is None:
                turn = max(now, self._next_free.get(key) or now)
                self._next_free.put(key, turn + 1000 / per_second, weight=1)
            if turn - now <= EARLY_MS:
                gone = self._gone.get(key) or deque()
                while gone and gone[0] <= now - WINDOW_MS:
                    gone.popleft()
                if len(gone) < per_second:
                    gone.append(now)
                    self._gone.put(key, gone, weight=1)
                    self._turns.discard((key, caller))
                    return 0
                turn = max(gone[0] + WINDOW_MS, self._next_free.get(key) or 0)
                self._next_free.put(key, turn + 1000 / per_second, weight=1)
            self._turns.put((key, caller), turn, weight=1)
            return turn - now


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

    def wait_ms(self, key: str, caller: str, *, per_second: int) -> float:
        if not self._outage.store_due():
            return 0
        keys = [f"pace:{key}:gone", f"pace:{key}:next", f"pace:{key}:turn:{caller}"]
        try:
            wait = self._script(keys=keys, args=[per_second, 1000 / per_second, EARLY_MS, caller])
        except redis.RedisError as error:
            self._outage.failed(error)
            return 0
        self._outage.answered()
        return float(wait)


@cache
def _pacer() -> MemoryPacer | RedisPacer:
    return RedisPacer(settings.REDIS_URL) if settings.REDIS_URL else MemoryPacer()
