"""Both clients behind one way of calling them, so that each test runs against each: ``hub.run(lambda nh:
nh.jobs.get(job_id))`` is the sync client's answer, or the async client's awaited in an event loop of the hub's own
(one ``asyncio.Runner`` for the test, so its connections outlive each call); ``hub.collect(lambda nh: nh.jobs.list())``
iterates a list, with ``async for`` for the async client. Between calls no loop runs: the test may use the ORM."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

Use = Callable[[Any], Any]


class Hub(Protocol):
    client: Any

    def run(self, use: Use) -> Any: ...

    def collect(self, use: Use) -> list[Any]: ...

    def close(self) -> None: ...


class SyncHub:
    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, use: Use) -> Any:
        return use(self.client)

    def collect(self, use: Use) -> list[Any]:
        return list(use(self.client))

    def close(self) -> None:
        self.client.close()


class AsyncHub:
    def __init__(self, client: Any) -> None:
        self.client = client
        self._loop = asyncio.Runner()

    def run(self, use: Use) -> Any:
        return self._loop.run(self._awaited(use))

    def collect(self, use: Use) -> list[Any]:
        return self._loop.run(self._gathered(use))

    def close(self) -> None:
        self._loop.run(self.client.aclose())
        self._loop.close()

    async def _awaited(self, use: Use) -> Any:
        return await use(self.client)

    async def _gathered(self, use: Use) -> list[Any]:
        return [item async for item in use(self.client)]
