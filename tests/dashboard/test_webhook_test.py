"""Send test webhook: a signed sample event to the holder's endpoint, through the webhook client, counted nowhere."""

from __future__ import annotations

import json
import re
import socket
from typing import Any

import pytest
from django.test import Client as Browser

from accounts.models import Account, UsagePeriod
from accounts.services import signing_secret_generate
from core.signing import verify_signature
from notifications.models import Job
from notifications.services import LOCAL_URL_MESSAGE
from tests.dashboard.pages import page_text
from tests.fakes.receiver import Receiver, Reply

Holder = tuple[Browser, Account]
pytestmark = pytest.mark.usefixtures("delivery_settings")


def send_test(browser: Browser, url: str) -> Any:
    return browser.post("/dashboard/webhooks/", {"action": "send-test-webhook", "url": url})


def test_a_signed_sample_event_arrives_and_the_page_shows_the_answer(holder: Holder, receiver: Receiver) -> None:
    browser, account = holder
    secret = signing_secret_generate(account=account)
    receiver.script("/hook", Reply(status=200, body=b'{"received":true}'))

    page = send_test(browser, receiver.url("/hook"))

    (arrival,) = receiver.wait_for(1)
    event = json.loads(arrival.body)
    assert (arrival.method, arrival.path) == ("POST", "/hook")
    assert event["type"] == "notifyhub.test"
    assert arrival.headers["X-Webhook-Id"] == event["id"]
    assert event["id"].startswith("test_")
    assert verify_signature(secret, arrival.headers["X-Webhook-Signature"], arrival.body)
    text = page_text(page)
    assert page.status_code == 200
    assert "Your endpoint answered 200 in" in text
    assert "a job would be delivered." in text
    assert f"Signature sent X-Webhook-Signature: {arrival.headers['X-Webhook-Signature']}" in text
    assert '{"received":true}' in text
    assert f"Sent to {receiver.url('/hook')}" in text


def test_a_test_creates_no_job_and_spends_no_quota(holder: Holder, receiver: Receiver) -> None:
    browser, account = holder

    send_test(browser, receiver.url())

    assert len(receiver.wait_for(1)) == 1
    assert not Job.objects.filter(account=account).exists()
    assert not UsagePeriod.objects.filter(account=account, used__gt=0).exists()


def test_without_a_signing_secret_the_page_says_the_signature_was_not_sent(holder: Holder, receiver: Receiver) -> None:
    browser, _ = holder

    text = page_text(send_test(browser, receiver.url()))

    (arrival,) = receiver.wait_for(1)
    assert "X-Webhook-Signature" not in arrival.headers
    assert "Signature not sent This account has no signing secret" in text


def test_an_error_answer_shows_its_status_and_the_first_2_kb(holder: Holder, receiver: Receiver) -> None:
    browser, _ = holder
    receiver.script("/hook", Reply(status=500, body=b"a" * 2048 + b"TAIL"))

    page = send_test(browser, receiver.url())
    text = page_text(page)

    assert page.status_code == 200
    assert "Your endpoint answered 500 in" in text
    assert "a job would fail this attempt (500 Internal Server Error)." in text
    assert "a" * 2048 in text
    assert "TAIL" not in text


def test_an_unreachable_endpoint_is_reported_not_raised(holder: Holder, receiver: Receiver) -> None:
    browser, _ = holder
    receiver.script("/hook", Reply(drop=True))

    page = send_test(browser, receiver.url())

    assert page.status_code == 200
    assert "Not delivered after" in page_text(page)
    assert "No response." in page_text(page)


def test_a_redirect_is_not_followed(holder: Holder, receiver: Receiver) -> None:
    browser, _ = holder
    receiver.script("/hook", Reply(status=302))

    text = page_text(send_test(browser, receiver.url()))

    assert "answered 302" in text
    assert "redirects are not followed" in text
    assert len(receiver.wait_for(1)) == 1


@pytest.mark.parametrize("url", ["http://example.com/hook", "example.com", "", "https://"])
def test_a_url_that_is_not_https_is_refused(holder: Holder, url: str) -> None:
    browser, _ = holder

    page = send_test(browser, url)

    assert page.status_code == 400
    assert any(
        message in page_text(page)
        for message in ("Enter a full HTTPS URL, such as https://example.com/webhooks.", "Enter the HTTPS URL")
    )


@pytest.mark.parametrize("url", ["https://127.0.0.1:9/hook", "https://localhost/hook", "https://[::1]/hook"])
def test_a_local_address_is_refused_as_for_a_job(holder: Holder, settings: Any, url: str) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    browser, _ = holder

    page = send_test(browser, url)

    assert page.status_code == 400
    assert LOCAL_URL_MESSAGE in page_text(page)


@pytest.fixture
def intranet_name(monkeypatch: pytest.MonkeyPatch) -> str:
    """A DNS name that resolves to a private address, as anyone's own domain can be made to."""
    name, resolve = "intranet.example.com", socket.getaddrinfo

    def resolve_intranet(host: str, *args: Any, **kwargs: Any) -> Any:
        return resolve("10.20.30.40" if host == name else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve_intranet)
    return name


def test_a_name_resolving_to_a_private_address_is_refused_without_naming_the_address(
    holder: Holder, settings: Any, intranet_name: str
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    browser, _ = holder

    page = send_test(browser, f"https://{intranet_name}/hook")
    text = page_text(page)

    assert page.status_code == 200
    assert re.search(r"Not delivered after \d+ ms: Refused: the URL resolves to a non-public address Sent to ", text)
    assert "10.20.30.40" not in text


def test_the_eleventh_test_within_a_minute_is_refused(holder: Holder, receiver: Receiver, startup: Any) -> None:
    browser, _ = holder
    answers = [send_test(browser, receiver.url()).status_code for _ in range(11)]

    assert answers == [200] * 10 + [429]
    assert "You have sent 10 test webhooks this minute." in page_text(send_test(browser, receiver.url()))
    assert len(receiver.wait_for(10)) == 10
