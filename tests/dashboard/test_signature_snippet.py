"""The webhooks page's "Checking the signature in your receiver (Python)", run as the page prints it against a real
delivery made while a rotated-out secret still signs (docs/delivery-engine.md, "Webhooks")."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client as Browser

from accounts.services import signing_secret_generate
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Receiver
from tests.notifications.test_webhook_delivery import send

pytestmark = pytest.mark.usefixtures("worker")

Check = Callable[[Any, bytes, str], bool]


def printed_check(page: str) -> Check:
    """The function the page shows, taken from its HTML as a reader copies it, and defined."""
    match = re.search(r"Checking the signature in your receiver \(Python\)</h3>\s*<pre>(.*?)</pre>", page, re.S)
    assert match, "the webhooks page shows no snippet"
    namespace: dict[str, Any] = {}
    exec(html.unescape(match.group(1)), namespace)  # the page's own text, as a holder pastes it
    check: Check = namespace["is_from_notifyhub"]
    return check


def test_the_printed_check_accepts_the_new_and_the_old_secret_during_an_overlap_and_refuses_a_tampered_body(
    free: Client, receiver: Receiver
) -> None:
    old = signing_secret_generate(account=free.account)
    new = signing_secret_generate(account=free.account)
    browser = Browser()
    browser.force_login(free.account.user)
    check = printed_check(browser.get("/dashboard/webhooks/").content.decode())

    wait_for_job(send(free, receiver, payload={"event": "signup", "name": "Zoë"}))

    (during,) = receiver.wait_for(1)
    assert during.headers["X-Webhook-Signature"].count("v1=") == 2
    assert check(during.headers, during.body, new)
    assert check(during.headers, during.body, old)
    tampered = during.body.replace(b"signup", b"signin")
    assert not check(during.headers, tampered, new)
    assert not check(during.headers, tampered, old)
    assert not check(during.headers, during.body, "whsec_" + "0" * 64)
