"""Kombu's Redis transport, with one Redis client per channel for its commands.

Kombu builds a new redis-py client object for every command a channel sends outside its
consumer loop, publishing included, and redis-py copies its table of response callbacks into
each one: a measurable share of every accepted send (bench/README.md). A client draws a pooled
connection per command and gives it back, so one client per channel serves every caller of
that channel safely.
`CELERY_BROKER_TRANSPORT` names this class when the broker is Redis.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

from kombu.transport import redis


class Channel(redis.Channel):
    @cached_property
    def _command_client(self) -> Any:
        return self._create_client()  # type: ignore[attr-defined]

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        yield client or self._command_client


class Transport(redis.Transport):
    Channel = Channel
