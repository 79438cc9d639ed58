from __future__ import annotations

from typing import Any

from accounts.models import KeyMode, KeyScope
from accounts.services import api_key_create
from tests.conftest import Client

APPS = "/api/v1/apps"


def patch(client: Client, path: str, body: Any) -> Any:
    return client.http.patch(path, body, format="json", HTTP_X_API_KEY=client.api_key)


def keyed(client: Client, *, scope: str = KeyScope.FULL, mode: str = KeyMode.LIVE) -> Client:
    """The same account, through another key of its own."""
    key = api_key_create(account=client.account, name=f"{scope}-{mode}", scope=scope, mode=mode)
    return Client(account=client.account, api_key=key, http=client.http)
