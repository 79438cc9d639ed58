"""The apps pages in a real browser, at a desktop's and a phone's width: a holder adds an app and an endpoint (each
refused once, in words, the input kept), reveals the endpoint's secret, rotates it, disables the endpoint and
deletes it; every page keeps the strict Content-Security-Policy and nothing scrolls sideways."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from core.crypto import decrypt
from customer_webhooks.models import App, Endpoint
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled
from tests.browser.test_content_security_policy import REFUSED, expect_strict

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
# The longest name and URL path a holder might give, with nowhere to break.
NAME = "Customer-" + "x" * 60
URL = "https://hooks.customer.example/" + "a" * 120


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    account, _api_key = account_create(email="grace@example.com", plan=Plan.FREE, password="plum-orchard-lantern-42")
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_holder_adds_an_app_and_an_endpoint_reveals_and_rotates_its_secret_and_deletes_it(
    page: Page, holder: Account, width: int
) -> None:
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.set_viewport_size({"width": width, "height": 844})
    expect_strict(page.goto("/dashboard/apps/"))
    expect_styled(page)
    expect(page.get_by_role("link", name="Apps", exact=True)).to_have_attribute("aria-current", "page")
    expect_no_sideways_scrolling(page, width)

    page.get_by_label("Name").fill(NAME)
    page.get_by_label("UID (optional)").fill("0" * 32)
    page.get_by_role("button", name="Add app").click()

    expect(page.get_by_role("alert")).to_have_text("uid must not be shaped like a UUID")
    expect(page.get_by_label("Name")).to_have_value(NAME)
    page.get_by_label("UID (optional)").fill("customer-42")
    page.get_by_role("button", name="Add app").click()

    expect(page.get_by_role("status")).to_have_text(f"App {NAME} is added: add its endpoints below.")
    expect(page.get_by_role("heading", name=f"App {NAME}")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    page.get_by_label("Endpoint URL").fill(URL)
    page.get_by_label("Event types (optional)").fill("invoice.paid, Invoice.Failed")
    page.get_by_label("Rate limit (optional)").fill("10")
    page.get_by_role("button", name="Add endpoint").click()

    expect(page.get_by_role("alert")).to_contain_text("Invoice.Failed is not an event type")
    expect(page.get_by_label("Endpoint URL")).to_have_value(URL)
    expect_no_sideways_scrolling(page, width)
    page.get_by_label("Event types (optional)").fill("invoice.paid, invoice.failed")
    page.get_by_role("button", name="Add endpoint").click()

    expect(page.get_by_role("status")).to_contain_text(f"Endpoint {URL} is added")
    expect(page.get_by_role("heading", name=f"Endpoint {URL}")).to_be_visible()
    endpoint = Endpoint.objects.get(app__account=holder)
    assert (endpoint.event_types, endpoint.rate_limit) == (["invoice.paid", "invoice.failed"], 10)
    assert page.locator("code#endpoint-secret").count() == 0
    expect_no_sideways_scrolling(page, width)
    with page.expect_response(re.compile(r"/secret/$")) as answer:
        page.get_by_role("button", name="Reveal secret").click()

    expect_strict(answer.value)
    assert answer.value.headers["cache-control"] == "no-store"
    first_secret = decrypt(endpoint.encrypted_secret)
    expect(page.locator("code#endpoint-secret")).to_have_text(first_secret)
    expect(page.get_by_role("button", name="Copy")).to_be_visible()  # the script runs under the policy
    expect_no_sideways_scrolling(page, width)
    page.get_by_role("link", name=f"Endpoint {URL}").click()
    page.get_by_role("link", name="Rotate secret…").click()

    expect(page.get_by_role("heading", name="Rotate this endpoint's secret?")).to_be_visible()
    expect(page.get_by_text("The old one keeps signing beside it for 1 day")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    page.get_by_role("button", name="Rotate secret").click()

    expect(page.get_by_role("heading", name="New signing secret")).to_be_visible()
    new_secret = page.locator("code#endpoint-secret").inner_text()
    assert new_secret != first_secret
    assert decrypt(Endpoint.objects.get(id=endpoint.id).encrypted_secret) == new_secret
    page.get_by_role("link", name=f"Endpoint {URL}").click()
    page.get_by_role("button", name="Disable").click()

    expect(page.get_by_role("status")).to_contain_text("is disabled: it receives nothing until enabled.")
    page.get_by_role("link", name=f"App {NAME}").click()
    expect(page.get_by_role("row").filter(has_text=URL)).to_contain_text("disabled")
    expect_no_sideways_scrolling(page, width)
    page.get_by_role("link", name=URL).click()
    page.get_by_role("link", name="Delete this endpoint…").click()
    expect_no_sideways_scrolling(page, width)
    page.get_by_role("button", name="Delete endpoint").click()

    expect(page.get_by_role("status")).to_have_text(f"Endpoint {URL} is deleted with its deliveries.")
    expect(page.get_by_text("No endpoint yet")).to_be_visible()
    assert not Endpoint.objects.filter(app__account=holder).exists()
    assert App.objects.get(account=holder).uid == "customer-42"
    page.get_by_role("link", name="Apps", exact=True).click()
    expect(page.get_by_role("row").filter(has_text=NAME)).to_contain_text("customer-42")
    expect_no_sideways_scrolling(page, width)
    assert not [text for text in console if REFUSED in text]
