"""The client's tests run against a live NotifyHub: pytest-django's live server in this process, its database the
test's, and for the deliveries the suite's Celery worker thread (``worker``, tests/conftest.py). Every test that takes
``connect`` or ``hub`` runs twice, with the sync client and with the async one (hubs.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from accounts.plans import Plan
from tests.client.hubs import AsyncHub, Hub, SyncHub
from tests.client.proxy import Proxy
from tests.client.sdk import notifyhub
from tests.conftest import Client

Connect = Callable[..., Hub]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def holder(make_client: Callable[..., Client]) -> Client:
    """A Startup account: 200 requests a minute, where the Free plan's 5 would stop a test."""
    return make_client(Plan.STARTUP)


@pytest.fixture(params=["sync", "async"])
def connect(request: pytest.FixtureRequest, live_server: Any) -> Iterator[Connect]:
    """Opens a client of the test's kind: ``connect(api_key, base_url=..., max_retries=..., timeout=...)``, the live
    server's URL by default."""
    opened: list[Hub] = []

    def open_hub(api_key: str, **options: Any) -> Hub:
        options.setdefault("base_url", live_server.url)
        hub: Hub
        if request.param == "sync":
            hub = SyncHub(notifyhub.NotifyHub(api_key, **options))
        else:
            hub = AsyncHub(notifyhub.AsyncNotifyHub(api_key, **options))
        opened.append(hub)
        return hub

    yield open_hub
    for hub in opened:
        hub.close()


@pytest.fixture
def hub(connect: Connect, holder: Client) -> Hub:
    return connect(holder.api_key)


@pytest.fixture
def proxy(live_server: Any) -> Iterator[Proxy]:
    server = Proxy(live_server.url)
    server.start()
    yield server
    server.stop()
