"""The two clients: ``NotifyHub`` answers each call when it returns, ``AsyncNotifyHub`` when it is awaited. They
share every operation (``_resources.py``); only their transport differs (``_transports.py``)."""

from __future__ import annotations

from typing import Self

from ._calls import Call, Route, reading
from ._models import Pong
from ._resources import (
    Account,
    Apps,
    Emails,
    EventEndpoints,
    Jobs,
    SenderDomain,
    Suppressions,
    Templates,
    Webhooks,
)
from ._surface import Resource, TransportT, operation
from ._transports import AsyncTransport, Settings, SyncTransport

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RETRIES = 2


class _Client(Resource[TransportT]):
    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        """``api_key`` and ``base_url`` default to ``NOTIFYHUB_API_KEY`` and ``NOTIFYHUB_BASE_URL``; ``timeout`` is
        each request's, in seconds; ``max_retries``: how often a call refused with 429 or 503, or whose connection
        failed, is sent again, if it cannot do its thing twice (``_retry.py``)."""
        transport = self._connect(Settings.resolve(api_key, base_url, timeout, max_retries))
        super().__init__(transport)
        self.webhooks: Webhooks[TransportT] = Webhooks(transport)
        self.emails: Emails[TransportT] = Emails(transport)
        self.jobs: Jobs[TransportT] = Jobs(transport)
        self.suppressions: Suppressions[TransportT] = Suppressions(transport)
        self.event_endpoints: EventEndpoints[TransportT] = EventEndpoints(transport)
        self.templates: Templates[TransportT] = Templates(transport)
        self.apps: Apps[TransportT] = Apps(transport)
        self.domain: SenderDomain[TransportT] = SenderDomain(transport)
        self.account: Account[TransportT] = Account(transport)

    def _connect(self, settings: Settings) -> TransportT:
        raise NotImplementedError

    @operation("GET", "/api/v1/ping")
    def ping(route: Route) -> Call[Pong]:
        """Checks the API key."""
        return route.call(reading(Pong))


class NotifyHub(_Client[SyncTransport]):
    """NotifyHub's API, each call answered when it returns. Close it, or use it in ``with``."""

    def _connect(self, settings: Settings) -> SyncTransport:
        return SyncTransport(settings)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncNotifyHub(_Client[AsyncTransport]):
    """NotifyHub's API for asyncio: the same operations, awaited; the lists iterated with ``async for``. Close it
    with ``await nh.aclose()``, or use it in ``async with``."""

    def _connect(self, settings: Settings) -> AsyncTransport:
        return AsyncTransport(settings)

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
