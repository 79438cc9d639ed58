"""The templates pages in a real browser, at a desktop's and a phone's width: create, edit, preview, versions; the
preview's frame shows the email with its styles and images, under a policy of its own, and runs none of its script,
while the page keeps its strict Content-Security-Policy."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from email_templates.models import Template
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_styled
from tests.browser.test_content_security_policy import REFUSED, expect_strict, policy

pytestmark = pytest.mark.browser

WIDTHS = [1280, PHONE_WIDTH]
# The longest alias there is, which has nowhere to break.
ALIAS = "a" * 64
# A style the frame applies (css-inline writes it into the element's style attribute); an image as an email may
# hold one, a 1x1 GIF; and a script that, were it to run, would mark the page that frames it, and its own title.
COLOUR = "rgb(200, 0, 0)"
GIF = "data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="
HTML = (
    f"<style>#greeting {{ color: {COLOUR} }}</style>"
    '<h1 id="greeting">Hello {{ name }}</h1>'
    f'<img id="dot" alt="" src="{GIF}">'
    '<script>document.title = "ran"; parent.document.body.dataset.ran = "yes";</script>'
)
SANDBOX_REFUSED = "because the document's frame is sandboxed and the 'allow-scripts' permission is not set"
FRAME_POLICY = {
    "sandbox": [],
    "default-src": ["'none'"],
    "style-src": ["'unsafe-inline'"],
    "img-src": ["https:", "data:"],
    "frame-ancestors": ["'self'"],
}


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    account, _api_key = account_create(email="grace@example.com", plan=Plan.FREE, password="plum-orchard-lantern-42")
    sign_in_as(account.user)
    return account


@pytest.mark.parametrize("width", WIDTHS)
def test_a_holder_creates_edits_previews_and_reads_the_versions(page: Page, holder: Account, width: int) -> None:
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/dashboard/templates/")
    expect_styled(page)
    expect(page.get_by_role("link", name="Templates", exact=True)).to_have_attribute("aria-current", "page")
    expect_no_sideways_scrolling(page, width)

    page.get_by_role("link", name="New template").click()
    page.get_by_label("Alias").fill(ALIAS)
    page.get_by_label("Name").fill("Welcome email")
    page.get_by_label("Subject").fill("Welcome, {{ name }}")
    page.get_by_label("HTML").fill("<p>{% if name %}")
    page.get_by_role("button", name="Create template").click()

    expect(page.get_by_role("alert")).to_contain_text("html has a syntax error on line 1: ")
    expect(page.get_by_label("Alias")).to_have_value(ALIAS)
    expect_no_sideways_scrolling(page, width)
    page.get_by_label("HTML").fill(HTML)
    page.get_by_role("button", name="Create template").click()

    expect(page.get_by_role("status")).to_have_text(f"Template {ALIAS} is saved as version 1.")
    expect(page.get_by_text("Version 1, saved")).to_be_visible()
    page.get_by_label("Subject").fill("Hello again, {{ name }}")
    page.get_by_role("button", name="Save version 2").click()

    expect(page.get_by_role("status")).to_have_text(f"Template {ALIAS} is saved as version 2.")
    expect_no_sideways_scrolling(page, width)
    page.get_by_role("link", name="Preview and test").click()
    page.get_by_label("Sample data (JSON)").fill('{"name": "Ada"}')
    with (
        page.expect_response(re.compile(r"/preview/$")) as answer,
        page.expect_response(re.compile(r"/preview/[A-Za-z0-9_-]+/$")) as frame_answer,
    ):
        page.get_by_role("button", name="Preview", exact=True).click()

    expect_strict(answer.value)
    assert policy(frame_answer.value) == FRAME_POLICY
    expect(page.locator(".rendered-subject")).to_have_text("Hello again, Ada")
    frame_element = page.locator("iframe.preview-frame")
    assert frame_element.get_attribute("sandbox") == ""
    frame = frame_element.element_handle().content_frame()
    assert frame is not None
    greeting = frame.locator("#greeting")
    expect(greeting).to_have_text("Hello Ada")
    expect(greeting).to_have_css("color", COLOUR)  # the template's <style>, as a recipient sees it
    expect(frame.locator("#dot")).to_have_js_property("naturalWidth", 1)  # an image the frame's policy lets load
    assert frame.evaluate("document.title") != "ran"
    assert page.evaluate("document.body.dataset.ran") is None
    assert page.title() != "ran"
    assert any(SANDBOX_REFUSED in text for text in console)
    assert not [text for text in console if REFUSED in text]
    expect_no_sideways_scrolling(page, width)

    page.get_by_role("link", name="Versions").click()
    page.get_by_role("link", name="Version 1", exact=True).click()

    expect(page.get_by_role("heading", name=f"Template {ALIAS}, version 1")).to_be_visible()
    expect(page.locator("dl.fields dd").nth(2)).to_have_text("Welcome, {{ name }}")
    expect(page.locator("pre.source").first).to_have_text(HTML)
    expect_no_sideways_scrolling(page, width)
    assert Template.objects.get(account=holder).versions.count() == 2
    page.get_by_role("link", name="Templates", exact=True).click()
    expect(page.get_by_role("row").filter(has_text=ALIAS)).to_contain_text("Welcome email")
    expect_no_sideways_scrolling(page, width)
