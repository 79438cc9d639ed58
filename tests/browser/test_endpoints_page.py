"""The endpoint health page in a real browser, at a desktop's and a phone's width: a failing destination first."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from notifications.models import DeliveryLog, DeliveryStatus, DestinationHealth, JobType
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled
from tests.factories import JobFactory

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]

DEAD = "notifications-receiver.eu-west-1.internal-services.example.com"
LONG_ERROR = "Could not connect to the receiver: the connection was refused before any answer came back"


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    """A signed-in holder whose webhooks went to two hosts today, one of them failing for an hour."""
    account, _api_key = account_create(email="ada@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    for destination, status, duration in [
        ("hooks.example.com", DeliveryStatus.SUCCESS, 42),
        ("hooks.example.com", DeliveryStatus.SUCCESS, 58),
        (DEAD, DeliveryStatus.FAILED, 3000),
    ]:
        job = JobFactory(account=account, type=JobType.WEBHOOK, destination=destination)
        DeliveryLog.objects.create(job=job, attempt=1, status=status, duration_ms=duration)
    DestinationHealth.objects.create(
        account=account,
        destination=DEAD,
        origin=f"https://{DEAD}",
        consecutive_failures=7,
        failing_since=timezone.now() - timedelta(hours=1),
        last_error=LONG_ERROR,
    )
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_failing_destination_leads_and_nothing_scrolls_sideways(page: Page, holder: Account, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 844})

    page.goto("/dashboard/endpoints/")

    expect_styled(page)
    expect(page.get_by_role("heading", name="Endpoint health")).to_be_visible()
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text(DEAD)
    expect(rows.nth(0)).to_contain_text("failing")
    expect(rows.nth(0)).to_contain_text("7 failed in a row since")
    expect(rows.nth(1)).to_contain_text("hooks.example.com")
    expect(rows.nth(1)).to_contain_text("healthy")
    expect(rows.nth(1)).to_contain_text("100%")
    # The attempts, median time and last error are for wider screens.
    last_error = rows.nth(0).get_by_text(LONG_ERROR)
    if width > PHONE_WIDTH:
        expect(last_error).to_be_visible()
        expect(rows.nth(1)).to_contain_text("42 ms")
    else:
        expect(last_error).to_be_hidden()
    expect_no_sideways_scrolling(page, width)
