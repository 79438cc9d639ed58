from __future__ import annotations

from typing import Any

import pytest
from requests_hardened.ip_filter import InvalidIPAddress

from notifications.delivery.http import webhook_session
from tests.api.test_envelope import assert_error
from tests.conftest import Client

MESSAGE = "url must not point to a local or private network address"


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/hook",
        "https://api.localhost/hook",
        "https://127.0.0.1/hook",
        "https://10.0.0.5/hook",
        "https://172.16.3.4/hook",
        "https://192.168.1.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://100.64.0.1/hook",
        "https://[::1]/hook",
        "https://[fd00::1]/hook",
        "https://[fe80::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[::7f00:1]/hook",
        "https://[::ffff:0:7f00:1]/hook",
        "https://[fec0::1]/hook",
        "https://[64:ff9b::7f00:1]/hook",
        "https://[2002:7f00:1::1]/hook",
        "https://224.0.0.1/hook",
        "https://0.0.0.0/hook",
    ],
)
def test_local_and_private_targets_are_refused_at_send_time(free: Client, url: str) -> None:
    assert_error(free.send_webhook(url=url), 400, MESSAGE)
    assert free.account.jobs.count() == 0


@pytest.mark.parametrize("url", ["https://hooks.example.com/in", "https://8.8.8.8/hook", "https://[2001:4860::8888]/"])
def test_public_targets_are_accepted(free: Client, url: str) -> None:
    assert free.send_webhook(url=url).status_code == 202


def test_local_targets_are_allowed_when_private_networks_are(free: Client, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True

    assert free.send_webhook(url="https://127.0.0.1:8443/hook").status_code == 202


@pytest.mark.parametrize("host", ["[::7f00:1]", "[::ffff:0:7f00:1]", "[fec0::1]", "127.0.0.1", "localhost"])
def test_the_client_refuses_non_public_addresses_when_it_connects(settings: Any, host: str) -> None:
    # What a name resolving to such an address meets at delivery: refused before any connection.
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False

    with pytest.raises(InvalidIPAddress):
        webhook_session().post(f"https://{host}:9/hook", data=b"{}")
