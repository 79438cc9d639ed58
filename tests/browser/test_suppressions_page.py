"""The suppressions page in a real browser, at a desktop's and a phone's width: add an address, then remove it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from suppressions.models import Suppression, SuppressionReason
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
# The widest row the list has: a long address a provider reported, with its provider and job.
BOUNCED = "a.rather-long-mailbox-name-for-testing@mail.subdomain.example.com"


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    """A signed-in Startup holder whose list already holds an address a provider's hard bounce added."""
    account, _api_key = account_create(email="grace@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    Suppression.objects.create(
        account=account, email=BOUNCED, reason=SuppressionReason.HARD_BOUNCE, provider="POSTMARK", job_id=uuid.uuid4()
    )
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_holder_adds_an_address_and_removes_it_once_confirmed(page: Page, holder: Account, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/dashboard/suppressions/")
    expect_styled(page)
    expect(page.get_by_role("link", name="Suppressions")).to_have_attribute("aria-current", "page")

    page.get_by_label("Email address").fill("Ada@Example.com")
    page.get_by_role("button", name="Add address").click()

    expect(page.get_by_role("status")).to_have_text(
        "ada@example.com is on the suppression list: emails to it now fail at once."
    )
    added = page.get_by_role("row").filter(has_text="ada@example.com")
    # A phone shows the address, the reason and Remove; the topic, the provider, the job and the date are for wider
    # screens (a topic's entry shows its topic on the question that removes it).
    on_wide_screens = ["—", "—", re.compile(r"\w{3} \d{1,2}, \d{4}, \d\d:\d\d")] if width > PHONE_WIDTH else []
    topic = ["Every email"] if width > PHONE_WIDTH else []
    expect(added.get_by_role("cell")).to_have_text(
        ["ada@example.com", *topic, "Added by hand", *on_wide_screens, "Remove…"]
    )
    reason = page.get_by_role("row").filter(has_text=BOUNCED).get_by_role("cell").filter(has_text="Hard bounce")
    expect(reason).to_have_count(1)
    expect_no_sideways_scrolling(page, width)

    added.get_by_role("button", name="Remove ada@example.com").click()

    expect(page.get_by_role("heading", name="Remove this address from the suppression list?")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    assert Suppression.objects.filter(account=holder, email="ada@example.com").exists()

    page.get_by_role("button", name="Remove address").click()

    expect(page).to_have_url(re.compile(r"/dashboard/suppressions/$"))
    expect(page.get_by_role("status")).to_have_text(
        "ada@example.com is off the suppression list: emails to it are sent again."
    )
    expect(page.get_by_role("row").filter(has_text="ada@example.com")).to_have_count(0)
    expect(page.get_by_role("row").filter(has_text=BOUNCED)).to_have_count(1)
    assert list(Suppression.objects.filter(account=holder).values_list("email", flat=True)) == [BOUNCED]
