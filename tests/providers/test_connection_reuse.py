"""Emails go out over a kept provider connection: one TCP and TLS handshake per provider and thread, not per email."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
import trustme

from providers.base import Credentials, OutgoingEmail
from providers.registry import get_provider
from tests.fakes.providers import Call, FakeSendGrid, Reply
from tests.providers_fixtures import SENDGRID_KEY, serving

EMAIL = OutgoingEmail(
    job_id=None, sender="noreply@em.example.com", to="user@example.com", subject="Hi", html="<p>x</p>"
)


class CookieSettingSendGrid(FakeSendGrid):
    """SendGrid behind a load balancer that pins clients with a cookie."""

    def _send(self, call: Call) -> Reply:
        reply = super()._send(call)
        return Reply(reply.status, reply.body, {**reply.headers, "Set-Cookie": "lb=node-7; Path=/"})


Serve = Callable[[FakeSendGrid], AbstractContextManager[FakeSendGrid]]


@pytest.fixture
def over_https(ca: trustme.CA, ca_bundle: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Serve:
    """Serves a fake SendGrid over HTTPS, its CA trusted as a deployment trusts a private one (requests reads
    REQUESTS_CA_BUNDLE)."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_bundle)
    return lambda fake: serving(fake.speak_tls(ca), settings, key=SENDGRID_KEY)


def send(key: str = SENDGRID_KEY) -> None:
    get_provider("SENDGRID").send(EMAIL, Credentials(api_key=key))


def test_three_emails_through_one_provider_open_one_connection(over_https: Serve) -> None:
    with over_https(FakeSendGrid()) as sendgrid:
        for _ in range(3):
            send()

        assert len(sendgrid.sent) == 3
        assert sendgrid.connections == 1


def test_accounts_with_different_keys_share_the_connection_each_with_its_own_key(over_https: Serve) -> None:
    with over_https(FakeSendGrid()) as sendgrid:
        sendgrid.accept_key("another-account-key")
        send(key=SENDGRID_KEY)
        send(key="another-account-key")

        assert [call.headers["Authorization"] for call in sendgrid.sent] == [
            f"Bearer {SENDGRID_KEY}",
            "Bearer another-account-key",
        ]
        assert sendgrid.connections == 1


def test_a_connection_the_provider_closed_is_replaced_and_the_email_goes_out(over_https: Serve) -> None:
    with over_https(FakeSendGrid()) as sendgrid:
        send()
        sendgrid.hang_up()
        send()

        assert len(sendgrid.sent) == 2
        assert sendgrid.connections == 2


def test_each_thread_sends_over_its_own_connection(over_https: Serve) -> None:
    with over_https(FakeSendGrid()) as sendgrid:
        send()
        other = threading.Thread(target=send)
        other.start()
        other.join()
        send()

        assert len(sendgrid.sent) == 3
        assert sendgrid.connections == 2


def test_a_cookie_the_provider_sets_is_never_sent_back(over_https: Serve) -> None:
    with over_https(CookieSettingSendGrid()) as sendgrid:
        send()
        send()

        assert [call.headers.get("Cookie") for call in sendgrid.sent] == [None, None]
