"""The broker transports: Redis in production, files for the embedded local run.

RedisTransport: kombu builds a new redis-py client object for every command a channel sends
outside its consumer loop (a publish, every late acknowledgement), and redis-py copies its table
of response callbacks into each one; on the delivery path that was a measurable share of each
delivery (docs/departures.md). A client draws a pooled connection per command and gives it back,
so one client per channel serves every caller of that channel safely.

FileTransport: kombu's filesystem transport, made safe for several processes at once.

`CELERY_BROKER_TRANSPORT` names one of them (settings).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, redis
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


# Off the framework's road: docs/departures.md, "redis-client-per-channel".
class RedisChannel(redis.Channel):
    @cached_property
    def _command_client(self) -> Any:
        return self._create_client()  # type: ignore[attr-defined]

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        yield client or self._command_client

    def waiting_by_step(self, queue: str) -> dict[int, int]:
        """The messages waiting in each of ``queue``'s lists, by priority step: kombu keeps a list a step and hands
        each one's messages out in the order they came (its ``_size`` is their sum)."""
        with self.conn_or_acquire() as client, client.pipeline() as pipe:
            for step in self.priority_steps:
                pipe.llen(self._q_for_pri(queue, step))  # type: ignore[attr-defined]  # kombu 5.6, absent from kombu-stubs
            return dict(zip(self.priority_steps, pipe.execute(), strict=True))


class RedisTransport(redis.Transport):
    Channel = RedisChannel


# Off the framework's road: docs/departures.md, "file-broker".
class FileChannel(filesystem.Channel):
    """Messages are whole when a reader can see them, and each is read by exactly one reader.

    Kombu writes a message in place and a reader may take it half-written (a JSONDecodeError
    that stopped the worker); here it is written under a name no reader looks for and renamed
    when complete. A reader claims a message by renaming it, which one reader alone can do.
    A reader that dies holding a message loses it; the sweeper re-sends the job (the database
    is the source of truth, docs/delivery-engine.md).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Names seen at the last listing, oldest first: one listing serves many reads.
        self._seen: dict[str, deque[str]] = {}

    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]  # as kombu-stubs: base and filesystem disagree
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        try:
            with open(final + ".partial", "wb") as partial:
                partial.write(str_to_bytes(dumps(payload)))
            os.replace(final + ".partial", final)
        except OSError as error:
            raise ChannelError(f"Cannot add file {final!r} to directory") from error

    def waiting_by_step(self, queue: str) -> dict[int, int]:
        """RedisChannel's: here every priority shares one list, read in the order it was written (to the
        millisecond: a message's name begins with its time)."""
        return {0: self._size(queue)}

    def priority(self, n: int) -> int:
        """The step a message of priority ``n`` waits at, as RedisChannel's: the one list's."""
        return 0

    def get_table(self, exchange: str) -> list[Any]:
        # Kombu records a binding in the process's shared state before it writes the table file,
        # and binds once per process: a publisher in another thread that looked in between found
        # no queue and dropped its message. The bindings this process knows count too.
        on_file: list[Any] = super().get_table(exchange)
        known_here = (self.state.exchanges or {}).get(exchange, {}).get("table", [])
        return on_file + [binding for binding in known_here if binding not in on_file]

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str | None, queue: str) -> None:
        # Kombu creates a missing exchange table by opening it for writing and only then locking
        # it: a publisher reading the table in between finds it empty (a JSONDecodeError). Here a
        # new table appears whole, under its final name, or not at all; kombu then adds the
        # binding to an existing table under its lock, as before.
        table: Path = self._exchange_file(exchange)  # type: ignore[attr-defined]  # kombu 5.6, absent from kombu-stubs
        if not table.exists():
            self.control_folder.mkdir(exist_ok=True)
            binding = [filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")]
            self._create_whole(table, str_to_bytes(dumps(binding)))
        super()._queue_bind(exchange, routing_key, pattern, queue)

    @staticmethod
    def _create_whole(path: Path, content: bytes) -> None:
        partial = path.with_name(f"{path.name}.{uuid.uuid4()}.partial")
        partial.write_bytes(content)
        try:
            os.link(partial, path)  # fails if another process created it first: theirs stands
        except FileExistsError:
            pass
        finally:
            partial.unlink()

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        pending = self._seen.setdefault(queue, deque())
        for _ in range(2):  # what the last listing still holds, then a fresh listing
            while pending:
                payload = self._claim(pending.popleft())
                if payload is not None:
                    return loads(bytes_to_str(payload))
            pending.extend(self._listing(queue))
        raise Empty()

    def _listing(self, queue: str) -> list[str]:
        wanted = f"{queue}.msg"
        return sorted(name for name in os.listdir(self.data_folder_in) if name.partition(".")[2] == wanted)

    def _claim(self, name: str) -> bytes | None:
        path = os.path.join(self.data_folder_in, name)
        claimed = f"{path}.{os.getpid()}-{threading.get_ident()}.claimed"
        try:
            os.rename(path, claimed)
        except OSError:
            return None  # another reader took it
        try:
            with open(claimed, "rb") as message:
                return message.read()
        finally:
            os.unlink(claimed)


class FileTransport(filesystem.Transport):
    Channel = FileChannel
