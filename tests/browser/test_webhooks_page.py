"""The webhooks page in a real browser: the event tracking receivers, as a table on a wide screen and as blocks of
labelled values on a phone, each receiver's URL and credential read whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.plans import Plan
from accounts.services import account_create
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_table_layout, expect_whole_on_screen
from webhooks_inbound.services import postmark_password_generate

pytestmark = pytest.mark.browser


def test_each_receivers_url_and_credential_read_whole_on_a_phone_and_as_a_table_on_a_wide_screen(
    page: Page, sign_in_as: Callable[[Any], None]
) -> None:
    account, _api_key = account_create(email="grace@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    postmark_password_generate(account=account)
    sign_in_as(account.user)
    page.goto("/dashboard/webhooks/")
    section = page.locator("section").filter(has=page.get_by_role("heading", name="Event tracking", exact=True))
    table = section.get_by_role("table")
    rows = table.locator("tbody tr")

    for width, stacked in ((PHONE_WIDTH, True), (1280, False)):
        page.set_viewport_size({"width": width, "height": 900})
        expect_table_layout(table, stacked=stacked)
        expect(rows.locator("td:nth-child(1)")).to_have_text(["Postmark", "SendGrid", "Resend"])
        expect(rows.locator("td:nth-child(3)")).to_have_text(["password set", "not set up", "not set up"])
        for row in rows.all():
            expect(row.locator("code")).to_contain_text(f"/{account.public_id}")
            expect_whole_on_screen(row.locator("code"), width)
            expect_whole_on_screen(row.locator("td:nth-child(3) .badge"), width)
        expect_no_sideways_scrolling(page, width)
