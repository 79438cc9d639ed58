"""The events page in a real browser, at a desktop's and a phone's width: add an endpoint, then delete it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from event_endpoints.models import Event, EventDelivery, EventDeliveryStatus, EventEndpoint
from event_endpoints.services import endpoint_create
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled
from tests.fakes.receiver import Receiver, Reply

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
# The widest rows the page has: a long URL subscribed to many types, whose failed delivery has a long error.
LONG_URL = "https://notifications-receiver.eu-west-1.internal-services.example.com/webhooks/notifyhub/events/v2"
ADDED_URL = "https://hooks.example.com/notifyhub/events"
LONG_ERROR = "Refused: the URL resolves to a non-public address after the endpoint's DNS record changed"


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    """A signed-in Startup holder with an endpoint already, and a few of its deliveries."""
    account, _api_key = account_create(email="grace@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    endpoint = endpoint_create(
        account=account,
        url=LONG_URL,
        events=["job.completed", "job.failed", "email.spam_report", "email.unsubscribed", "suppression.created"],
    )
    # Rows as a worker leaves them: emitting through the services would also put tasks on the shared broker.
    now = timezone.now()
    for minutes, status, attempts, error in [
        (1, EventDeliveryStatus.PROCESSING, 1, None),
        (5, EventDeliveryStatus.FAILED, 3, LONG_ERROR),
        (9, EventDeliveryStatus.COMPLETED, 1, None),
    ]:
        event = Event.objects.create(account=account, type="email.unsubscribed", data={}, created_at=now)
        EventDelivery.objects.create(
            event=event,
            endpoint=endpoint,
            status=status,
            attempts=attempts,
            error_message=error,
            created_at=now - timedelta(minutes=minutes),
        )
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_holder_adds_an_endpoint_and_deletes_it_once_confirmed(page: Page, holder: Account, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/dashboard/events/")
    expect_styled(page)
    expect(page.get_by_role("link", name="Events")).to_have_attribute("aria-current", "page")
    expect_no_sideways_scrolling(page, width)

    page.get_by_label("Endpoint URL").fill(ADDED_URL)
    page.get_by_role("group", name="Event types").get_by_label("job.failed").check()
    page.get_by_label("email.bounced").check()
    page.get_by_role("button", name="Add endpoint").click()

    expect(page.get_by_role("status")).to_have_text(f"{ADDED_URL} now receives job.failed, email.bounced events.")
    added = page.get_by_role("row").filter(has_text=ADDED_URL)
    # A phone shows the URL with its types, and the buttons; the date is for wider screens.
    on_wide_screens = [re.compile(r"\w{3} \d{1,2}, \d{4}, \d\d:\d\d")] if width > PHONE_WIDTH else []
    expect(added.locator("td:visible")).to_have_text(
        [f"{ADDED_URL} job.failed, email.bounced", *on_wide_screens, re.compile(r"Send test event\s+Delete…")],
        use_inner_text=True,
    )
    assert [(endpoint.url, endpoint.events) for endpoint in EventEndpoint.objects.filter(account=holder)] == [
        (LONG_URL, ["job.completed", "job.failed", "email.spam_report", "email.unsubscribed", "suppression.created"]),
        (ADDED_URL, ["job.failed", "email.bounced"]),
    ]
    expect_no_sideways_scrolling(page, width)

    added.get_by_role("button", name=f"Delete {ADDED_URL}").click()

    expect(page.get_by_role("heading", name="Delete this event endpoint?")).to_be_visible()
    expect(page.get_by_text("job.failed, email.bounced · added")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    assert EventEndpoint.objects.filter(account=holder, url=ADDED_URL).exists()

    page.get_by_role("button", name="Delete endpoint").click()

    expect(page).to_have_url(re.compile(r"/dashboard/events/$"))
    expect(page.get_by_role("status")).to_have_text(f"{ADDED_URL} is deleted: it receives no more events.")
    expect(page.get_by_role("row").filter(has_text=ADDED_URL)).to_have_count(0)
    expect(page.get_by_role("table").first.get_by_role("row").filter(has_text=LONG_URL)).to_have_count(1)
    assert list(EventEndpoint.objects.filter(account=holder).values_list("url", flat=True)) == [LONG_URL]


@pytest.mark.parametrize("width", WIDTHS)
def test_recent_deliveries_show_what_names_each_at_any_width(page: Page, holder: Account, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/dashboard/events/")

    deliveries = page.locator("table.event-deliveries")
    # A phone shows the event with its endpoint, and the status; attempts, the last error and the time are for wider
    # screens.
    headers = ["Event", "Status", *(["Attempts", "Last error", "Created (UTC)"] if width > PHONE_WIDTH else [])]
    expect(deliveries.locator("th:visible")).to_have_text(headers)
    failed = deliveries.get_by_role("row").filter(has_text="failed")
    wide: list[str | re.Pattern[str]] = ["3", LONG_ERROR, re.compile(r"\w{3} \d{1,2}, \d\d:\d\d:\d\d")]
    on_wide_screens = wide if width > PHONE_WIDTH else []
    expect(failed.locator("td:visible")).to_have_text(
        [f"email.unsubscribed to {LONG_URL}", "failed", *on_wide_screens], use_inner_text=True
    )
    expect(deliveries.locator("tbody tr td:nth-child(2)")).to_have_text(["processing", "failed", "completed"])
    expect_no_sideways_scrolling(page, width)


def test_an_empty_add_form_says_what_is_missing(page: Page, holder: Account) -> None:
    page.goto("/dashboard/events/")

    page.get_by_role("button", name="Add endpoint").click()

    expect(page.locator("#id_url_error")).to_have_text("url must be a valid HTTPS URL")
    expect(page.locator("#id_events_error")).to_have_text("Choose at least one event type")
    assert EventEndpoint.objects.filter(account=holder).count() == 1


@pytest.mark.usefixtures("delivery_settings")
@pytest.mark.parametrize("width", WIDTHS)
def test_a_test_event_shows_the_endpoints_answer(page: Page, holder: Account, receiver: Receiver, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 844})
    url = receiver.url("/notifyhub/events")
    endpoint_create(account=holder, url=url, events=["job.failed"])
    receiver.script("/notifyhub/events", Reply(status=503, body=b'{"error":"' + b"busy " * 200 + b'"}'))
    page.goto("/dashboard/events/")

    page.get_by_role("button", name=f"Send test event to {url}").click()

    expect(page.get_by_role("heading", name="Test event")).to_be_visible()
    expect(page.locator("#test-event").get_by_role("status")).to_contain_text(
        re.compile(
            r"Your endpoint answered 503 in \d+ ms: an event would fail this attempt \(503 Service Unavailable\)"
        )
    )
    (arrival,) = receiver.wait_for(1)
    assert arrival.path == "/notifyhub/events"
    expect(page.locator("#test-event pre").last).to_contain_text('{"error":"busy busy')
    expect_no_sideways_scrolling(page, width)
