"""The only part of the client written twice: performing a flow's steps (``_flows.py``) with httpx's sync or async
client, and walking a paged list with a plain or an async iterator; and the settings both clients start from."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from ._calls import Call, Page, Paging
from ._decode import D
from ._flows import Flow, Send, Step, exchange
from ._retry import Outcome, RetryPolicy
from ._version import VERSION

T = TypeVar("T")

USER_AGENT = f"notifyhub-python/{VERSION}"


@dataclass(frozen=True)
class Settings:
    api_key: str = field(repr=False)
    base_url: str
    timeout: float
    max_retries: int

    @classmethod
    def resolve(cls, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Settings:
        """The arguments, else the environment's ``NOTIFYHUB_API_KEY`` and ``NOTIFYHUB_BASE_URL``."""
        api_key = api_key or os.environ.get("NOTIFYHUB_API_KEY")
        base_url = base_url or os.environ.get("NOTIFYHUB_BASE_URL")
        if not api_key:
            raise ValueError("No API key: pass api_key or set NOTIFYHUB_API_KEY")
        if not base_url:
            raise ValueError("No base URL: pass base_url (e.g. http://127.0.0.1:8000) or set NOTIFYHUB_BASE_URL")
        return cls(api_key, base_url, timeout, max_retries)

    def http_options(self) -> dict[str, Any]:
        """httpx's client options, the same for both clients. Redirects are not followed: a send must not be
        re-sent elsewhere."""
        headers = {"X-API-Key": self.api_key, "User-Agent": USER_AGENT, "Accept": "application/json"}
        return {"base_url": self.base_url, "headers": headers, "timeout": self.timeout, "follow_redirects": False}


class SyncTransport:
    def __init__(self, settings: Settings) -> None:
        self.retry = RetryPolicy(settings.max_retries)
        self._http = httpx.Client(**settings.http_options())

    def call(self, call: Call[T]) -> T:
        return self.run(exchange(call, self.retry))

    def iterate(self, paging: Paging[D]) -> Iterator[D]:
        call: Call[Page[D]] | None = paging.first()
        while call is not None:
            page = self.call(call)
            yield from page.items
            call = paging.after(page)

    def run(self, flow: Flow[T]) -> T:
        reply: Outcome | None = None
        while True:
            try:
                step = flow.send(reply)
            except StopIteration as finished:
                done: T = finished.value
                return done
            reply = self._perform(step)

    def _perform(self, step: Step) -> Outcome | None:
        if not isinstance(step, Send):
            time.sleep(step.seconds)
            return None
        try:
            return self._http.send(step.call.request(self._http))
        except httpx.TransportError as error:
            return error

    def close(self) -> None:
        self._http.close()


class AsyncTransport:
    def __init__(self, settings: Settings) -> None:
        self.retry = RetryPolicy(settings.max_retries)
        self._http = httpx.AsyncClient(**settings.http_options())

    async def call(self, call: Call[T]) -> T:
        return await self.run(exchange(call, self.retry))

    async def iterate(self, paging: Paging[D]) -> AsyncIterator[D]:
        call: Call[Page[D]] | None = paging.first()
        while call is not None:
            page = await self.call(call)
            for item in page.items:
                yield item
            call = paging.after(page)

    async def run(self, flow: Flow[T]) -> T:
        reply: Outcome | None = None
        while True:
            try:
                step = flow.send(reply)
            except StopIteration as finished:
                done: T = finished.value
                return done
            reply = await self._perform(step)

    async def _perform(self, step: Step) -> Outcome | None:
        if not isinstance(step, Send):
            await asyncio.sleep(step.seconds)
            return None
        try:
            return await self._http.send(step.call.request(self._http))
        except httpx.TransportError as error:
            return error

    async def aclose(self) -> None:
        await self._http.aclose()
