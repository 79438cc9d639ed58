"""The API keys page in a real browser, at a desktop's and a phone's width: create a send-only key, see it once and
in the list, call the API with it, then revoke it. The key is a test key: its scope's cell says so."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Account, ApiKey
from accounts.plans import Plan
from accounts.services import account_create
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled
from tests.browser.walk import ping

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
# The longest name a key may have, with no space to break at: the widest row the list has.
LONG_NAME = "nightly-export-to-the-data-warehouse-in-eu-central-1-for-finance"
DATE = r"\w{3} \d{1,2}, \d{4}, \d\d:\d\d"


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    """A signed-in Startup holder whose first key has the longest name there is, never used."""
    account, _api_key = account_create(email="grace@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    ApiKey.objects.filter(account=account).update(name=LONG_NAME)
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_holder_creates_a_send_test_key_sees_it_once_and_revokes_it(
    page: Page, live_server: Any, holder: Account, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/dashboard/api-key/")
    expect_styled(page)
    expect(page.get_by_role("link", name="API keys")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("button", name="Generate API key")).to_have_count(0)
    expect_no_sideways_scrolling(page, width)

    page.get_by_label("Name", exact=True).fill("Deploy bot")
    page.get_by_label("Scope", exact=True).select_option(label="Send only")
    page.get_by_label("Mode", exact=True).select_option(label="Test")
    page.get_by_role("button", name="Create API key").click()

    shown = page.locator("code#new-api-key")
    expect(shown).to_have_text(re.compile(r"^nh_[0-9a-f]{64}$"))
    key = shown.inner_text()
    expect(page.get_by_role("heading", name="Your new API key")).to_be_visible()
    expect(page.locator("#new-key")).to_contain_text("Deploy bot · Send only · Test")
    expect(page.get_by_role("button", name="Copy")).to_be_visible()  # the script ran, on localhost
    row = page.get_by_role("row").filter(has_text="Deploy bot")
    expect(row.get_by_role("cell").nth(1)).to_have_text("Send only Test")
    expect_no_sideways_scrolling(page, width)
    assert ping(live_server.url, key).status_code == 200

    page.goto("/dashboard/api-key/")

    expect(page.locator("code#new-api-key")).to_have_count(0)
    expect(page.get_by_text(key)).to_have_count(0)
    row = page.get_by_role("row").filter(has_text="Deploy bot")
    name_cell = re.compile(rf"^Deploy bot\s*{re.escape(key[:10])}…")
    if width > PHONE_WIDTH:  # the dates have columns of their own
        cells = [name_cell, "Send only Test", re.compile(DATE), re.compile(DATE), "Revoke"]
    else:  # a phone shows them under the name
        name_cell = re.compile(rf"{name_cell.pattern}\s*Created \w{{3}} \d{{1,2}}, \d{{4}} · last used {DATE} UTC$")
        cells = [name_cell, "Send only Test", "Revoke"]
    expect(row.get_by_role("cell")).to_have_text(cells)
    expect(page.get_by_role("row").filter(has_text=LONG_NAME)).to_contain_text("never")
    expect_no_sideways_scrolling(page, width)

    row.get_by_role("button", name="Revoke the API key Deploy bot").click()

    expect(page).to_have_url(re.compile(r"/dashboard/api-key/$"))
    expect(page.get_by_role("status")).to_have_text("Revoked the API key Deploy bot.")
    expect(page.get_by_role("row").filter(has_text="Deploy bot")).to_have_count(0)
    expect(page.get_by_role("row").filter(has_text=LONG_NAME)).to_have_count(1)
    assert ping(live_server.url, key).status_code == 401
    expect_no_sideways_scrolling(page, width)
