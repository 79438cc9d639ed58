"""The unsubscribe page in a real browser, at a desktop's and a phone's width, opened from an email's link with no
session: unsubscribe, then resubscribe (docs/suppressions.md, "One-click unsubscribe")."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from accounts.plans import Plan
from accounts.services import account_create
from suppressions.models import Suppression
from suppressions.unsubscribe import unsubscribe_token
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled

pytestmark = pytest.mark.browser

# A long address and topic: the widest the page's text gets.
RECIPIENT = "a.rather-long-mailbox-name-for-testing@mail.subdomain.example.com"
TOPIC = "weekly-product-digest-and-release-notes"


@pytest.mark.parametrize("width", [1280, PHONE_WIDTH])
def test_a_recipient_unsubscribes_then_resubscribes(page: Page, width: int) -> None:
    account, _api_key = account_create(email="grace@example.com", plan=Plan.FREE, password="plum-orchard-lantern-42")
    path = f"/unsubscribe/{unsubscribe_token(account_id=account.pk, email=RECIPIENT, topic=TOPIC)}/"
    page.set_viewport_size({"width": width, "height": 844})

    page.goto(path)
    expect_styled(page)
    expect(page.get_by_role("heading", name=f"Unsubscribe from {TOPIC}?")).to_be_visible()
    expect(page.get_by_text("a***@mail.subdomain.example.com")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    assert not Suppression.objects.exists()

    page.get_by_role("button", name="Unsubscribe").click()

    expect(page.get_by_role("heading", name="You are unsubscribed")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    assert list(Suppression.objects.values_list("email", "topic", "reason")) == [(RECIPIENT, TOPIC, "UNSUBSCRIBED")]

    page.get_by_role("button", name=f"Resubscribe to {TOPIC}").click()

    expect(page.get_by_role("heading", name=f"Unsubscribe from {TOPIC}?")).to_be_visible()
    assert not Suppression.objects.exists()
