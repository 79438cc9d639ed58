"""The audit log page in a real browser, at a desktop's and a phone's width: a change made on the dashboard shows at
the top, with who made it and from where, and older changes are a page further on."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import Account, AuditEntry
from accounts.plans import Plan
from accounts.services import account_create
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
DATE = r"\w{3} \d{1,2}, \d{4}, \d\d:\d\d"
# The widest rows the log has: an endpoint's long URL, added by a staff user with a long name, from an IPv6 address.
LONG_URL = "https://***@notifications-receiver.internal-tools.example.com/hooks/notifyhub/events/production-eu-1"
LONG_STAFF = "staff:operations-team-lead@notifyhub.example.com"
IPV6 = "2001:db8:85a3:1234:5678:8a2e:370:7334"


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    """A signed-in Startup holder with 25 older changes besides their first key's: a page's worth and more."""
    account, _api_key = account_create(email="grace@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    start = timezone.now() - timedelta(days=3)
    AuditEntry.objects.bulk_create(
        AuditEntry(
            account=account,
            action="event_endpoint.created",
            actor=LONG_STAFF,
            target=LONG_URL,
            ip=IPV6,
            created_at=start + timedelta(minutes=number),
        )
        for number in range(25)
    )
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_change_on_the_dashboard_tops_the_audit_log_with_who_and_from_where(
    page: Page, holder: Account, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/dashboard/suppressions/")
    page.get_by_label("Email address").fill("ada@example.com")
    page.get_by_role("button", name="Add address").click()
    expect(page.get_by_role("status")).to_contain_text("ada@example.com is on the suppression list")

    page.get_by_role("link", name="Audit log").click()

    expect(page).to_have_url(re.compile(r"/dashboard/audit/$"))
    expect_styled(page)
    expect(page.get_by_role("link", name="Audit log")).to_have_attribute("aria-current", "page")
    expect(page.get_by_text("27 changes, newest first.")).to_be_visible()
    newest, first_key, staffs = (page.get_by_role("row").nth(number) for number in (1, 2, 3))
    if width > PHONE_WIDTH:  # when, who and from where have columns of their own
        expect(newest.get_by_role("cell")).to_have_text(
            [re.compile(DATE), re.compile(r"^Suppression added"), "ada@example.com", "holder", "127.0.0.1"]
        )
        expect(first_key.get_by_role("cell")).to_have_text(
            [re.compile(DATE), re.compile(r"^API key created"), "Default", "operator", "—"]
        )
        expect(staffs.get_by_role("cell")).to_have_text(
            [re.compile(DATE), re.compile(r"^Event endpoint created"), LONG_URL, LONG_STAFF, IPV6]
        )
    else:  # a phone shows them on a line under the change
        expect(newest.get_by_role("cell")).to_have_text(
            [re.compile(rf"^Suppression added\s*{DATE} UTC · holder · 127\.0\.0\.1$"), "ada@example.com"]
        )
        expect(first_key.get_by_role("cell")).to_have_text(
            [re.compile(rf"^API key created\s*{DATE} UTC · operator$"), "Default"]
        )
        expect(staffs.get_by_role("cell")).to_have_text(
            [re.compile(rf"^Event endpoint created\s*{DATE} UTC · {re.escape(LONG_STAFF)} · {IPV6}$"), LONG_URL]
        )
    expect_no_sideways_scrolling(page, width)

    page.get_by_role("link", name="Older →").click()

    expect(page).to_have_url(re.compile(r"/dashboard/audit/\?page=2$"))
    expect(page.get_by_text("Page 2 of 2")).to_be_visible()
    expect(page.get_by_role("row")).to_have_count(3)  # the heading's and the two oldest changes
    expect_no_sideways_scrolling(page, width)
