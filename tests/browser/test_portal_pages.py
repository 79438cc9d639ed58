"""The consumer portal in a real browser, at a desktop's and a phone's width: the holder makes a portal link with the
app page's `Portal link` button (shown once, in a read-only field, with its expiry); the holder's customer opens it,
lands on a URL without its token under the holder's product name, adds an endpoint (refused once, in words, the
input kept), reveals its secret, reads a message's attempts and resends the failed delivery; every page keeps the
strict Content-Security-Policy, its forms pass the CSRF check, and nothing scrolls sideways."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Account, AuditEntry
from accounts.plans import Plan
from accounts.services import account_create
from core.crypto import decrypt
from customer_webhooks.models import App, Endpoint
from notifications.models import Job, JobStatus
from tests.browser.pages import (
    PHONE_WIDTH,
    expect_no_sideways_scrolling,
    expect_styled,
    expect_table_layout,
    expect_whole_on_screen,
)
from tests.browser.test_content_security_policy import REFUSED, expect_strict
from tests.factories import AppFactory, DeliveryLogFactory, message_sent

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
# A URL path a customer might give, with nowhere to break.
URL = "https://hooks.globex.example/" + "b" * 100


@pytest.fixture
def app(live_server: object) -> App:
    account, _api_key = account_create(email="ada@example.com", plan=Plan.STARTUP, password="plum-orchard-lantern-42")
    Account.objects.filter(id=account.id).update(product_name="Umbrella Payments")
    return AppFactory(account=account, uid="globex", name="Globex Corporation")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_holder_makes_a_link_and_a_customer_opens_it_adds_an_endpoint_reveals_its_secret_and_reads_attempts(
    page: Page, app: App, sign_in_as: Callable[[Any], None], width: int
) -> None:
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.set_viewport_size({"width": width, "height": 844})
    sign_in_as(app.account.user)
    expect_strict(page.goto(f"/dashboard/apps/{app.id}/"))
    expect_no_sideways_scrolling(page, width)
    with page.expect_response(re.compile(r"/portal-link/$")) as made:
        page.get_by_role("button", name="Portal link").click()

    expect_strict(made.value)
    assert made.value.headers["cache-control"] == "no-store"
    expect(page.get_by_role("heading", name="Portal link")).to_be_visible()
    field = page.get_by_label("Link")
    expect(field).to_have_attribute("readonly", "")
    expect(page.get_by_text("It works until")).to_contain_text(" UTC")
    expect(page.get_by_text("Whoever holds this link manages this app's endpoints")).to_be_visible()
    expect(page.get_by_role("button", name="Copy")).to_be_visible()  # the script reads the field under the policy
    expect_whole_on_screen(field, width)
    expect_no_sideways_scrolling(page, width)
    assert AuditEntry.objects.filter(account=app.account, action="portal_link.created", actor="holder").count() == 1
    link = urlsplit(field.input_value()).path

    with page.expect_response(re.compile(r"/portal/[^/]+\.[^/]+/$")) as opened:
        expect_strict(page.goto(link))
    assert opened.value.status == 302
    assert opened.value.headers["referrer-policy"] == "no-referrer"
    expect(page).to_have_url(re.compile(r"/portal/$"))
    expect_styled(page)
    expect(page.locator("header .brand")).to_have_text("Umbrella Payments")
    expect(page.get_by_role("heading", name="Webhooks for Globex Corporation")).to_be_visible()
    expect(page.get_by_role("link", name="Dashboard")).to_have_count(0)
    assert page.title() == "Webhooks · Umbrella Payments"
    expect_no_sideways_scrolling(page, width)

    page.get_by_label("Endpoint URL").fill("https://10.1.2.3/in")
    page.get_by_label("Event types (optional)").fill("invoice.paid")
    page.get_by_role("button", name="Add endpoint").click()

    expect(page.get_by_role("alert")).to_contain_text("url must not point to a local or private network address")
    expect(page.get_by_label("Event types (optional)")).to_have_value("invoice.paid")
    page.get_by_label("Endpoint URL").fill(URL)
    page.get_by_role("button", name="Add endpoint").click()

    expect(page.get_by_role("status")).to_contain_text(f"Endpoint {URL} is added")
    expect(page.get_by_role("heading", name=f"Endpoint {URL}")).to_be_visible()
    endpoint = Endpoint.objects.get(app=app)
    assert endpoint.event_types == ["invoice.paid"]
    expect_no_sideways_scrolling(page, width)
    with page.expect_response(re.compile(r"/secret/$")) as answer:
        page.get_by_role("button", name="Reveal secret").click()

    expect_strict(answer.value)
    assert answer.value.headers["cache-control"] == "no-store"
    expect(page.locator("code#endpoint-secret")).to_have_text(decrypt(endpoint.encrypted_secret))
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    expect_no_sideways_scrolling(page, width)
    entries = AuditEntry.objects.filter(account=app.account, action="endpoint.created")
    assert list(entries.values_list("actor", flat=True)) == ["portal:globex"]

    sent = message_sent(app=app, event_type="invoice.paid", payload={"invoice": "in_7"})
    job = sent.deliveries[0]
    Job.objects.filter(id=job.id).update(status=JobStatus.FAILED, attempts=1, error_message="503 Service Unavailable")
    DeliveryLogFactory(job_id=job.id, attempt=1, response_status=503, duration_ms=1204)
    page.locator("header .brand").click()
    page.get_by_role("link", name="invoice.paid").click()

    attempts = page.locator("table.stacked").nth(1)
    expect(attempts).to_contain_text("1204 ms")
    expect(attempts).to_contain_text("503 Service Unavailable")
    expect_whole_on_screen(attempts.locator("tbody tr").first, width)
    expect_table_layout(attempts, stacked=width == PHONE_WIDTH)
    expect_no_sideways_scrolling(page, width)
    page.get_by_role("button", name=f"Resend to {URL}").click()

    expect(page.get_by_role("status")).to_have_text("The delivery is queued again: its attempts start over.")
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING
    expect_no_sideways_scrolling(page, width)
    assert not [text for text in console if REFUSED in text]
