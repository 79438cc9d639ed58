"""Pages run under a Content-Security-Policy without inline script (docs/dashboard.md, "Content-Security-Policy").

Chromium reports every resource, script, handler or style the policy refuses on the console: the dashboard's pages,
the Swagger page and the admin's changelist show none there, at a desktop's and a phone's width, and what their
scripts do still happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import ConsoleMessage, Page, Response, expect

from customer_webhooks.models import App
from tests.browser.demo import DEMO_APP_ID, DemoHolder
from tests.browser.pages import PAGES, PageSpec, open_page, portal_open

pytestmark = pytest.mark.browser

WIDTHS = [1280, 390]
# What each message Chromium logs when the policy refuses something says ("Executing inline script violates the
# following Content Security Policy directive 'script-src 'self''. ... The action has been blocked.").
REFUSED = "violates the following Content Security Policy directive"
STRICT = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'none'"],
}


@pytest.fixture
def refusals(page: Page) -> list[str]:
    """What the page's console said the policy refused, and the errors its scripts threw, from now on."""
    problems: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if REFUSED in message.text:
            problems.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    return problems


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request: pytest.FixtureRequest, page: Page) -> int:
    page.set_viewport_size({"width": request.param, "height": 844})
    return int(request.param)


@pytest.fixture
def staff(sign_in_as: Callable[[Any], None]) -> None:
    user = get_user_model().objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "ops-password-1")
    sign_in_as(user)


def policy(response: Response | None) -> dict[str, list[str]]:
    """The response's Content-Security-Policy header, directive by directive."""
    assert response is not None
    header = response.header_value("Content-Security-Policy")
    assert header, f"{response.url} has no Content-Security-Policy"
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: sources for name, *sources in directives}


def is_page(response: Response) -> bool:
    """A document the window itself shows, not one of a frame in it."""
    request = response.request
    return request.is_navigation_request() and request.frame.parent_frame is None


def expect_strict(response: Response | None) -> None:
    directives = policy(response)
    assert {name: directives.get(name) for name in STRICT} == STRICT


@pytest.mark.parametrize("spec", PAGES, ids=str)
def test_a_dashboard_page_keeps_to_the_policy_and_its_script_runs(
    spec: PageSpec,
    page: Page,
    width: int,
    refusals: list[str],
    demo_holder: DemoHolder,
    sign_in_as: Callable[[Any], None],
) -> None:
    if spec.signed_in:
        sign_in_as(demo_holder.user)
    if spec.portal:  # its session opened before the pages are watched: the link redirects
        portal_open(page, App.objects.get(id=DEMO_APP_ID))
        spec = replace(spec, portal=False)
    # Every page the steps reach, not only the first: the template preview's POST answer too (its frame's own
    # answer, a document of a child frame, has its own policy: tests/browser/test_templates_pages.py).
    pages: list[Response] = []
    page.on("response", lambda response: pages.append(response) if is_page(response) else None)
    open_page(page, spec)

    assert pages[0].url.endswith(spec.path)
    for response in pages:
        expect_strict(response)
    # notifyhub.js shows every copy button (progressive enhancement): one still hidden means it did not run.
    expect(page.locator("button.copy[hidden]")).to_have_count(0)
    assert refusals == []


def test_a_copy_button_copies_the_new_api_key(
    page: Page, width: int, refusals: list[str], demo_holder: DemoHolder, sign_in_as: Callable[[Any], None]
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in_as(demo_holder.user)
    page.goto("/dashboard/api-key/")
    page.get_by_label("Name", exact=True).fill("CI")
    page.get_by_role("button", name="Create API key").click()
    key = page.locator("code#new-api-key").inner_text()

    page.get_by_role("button", name="Copy").click()

    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == key
    expect(page.get_by_role("button", name="Copy")).to_be_visible()  # back after 1.5 s
    assert refusals == []


def test_the_swagger_page_runs_its_start_up_script_by_nonce(page: Page, width: int, refusals: list[str]) -> None:
    response = page.goto("/api/docs/")

    directives = policy(response)
    nonces = [source for source in directives["script-src"] if source.startswith("'nonce-")]
    assert directives["script-src"] == ["'self'", *nonces]
    assert len(nonces) == 1
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("NotifyHub API")
    expect(page.locator(".opblock").first).to_be_visible()  # the operations, drawn from /api/v1/schema/
    assert refusals == []


def test_the_admin_changelist_keeps_to_the_policy_and_its_scripts_run(
    page: Page, width: int, refusals: list[str], demo_holder: DemoHolder, staff: None
) -> None:
    response = page.goto("/admin/accounts/account/")

    assert response is not None
    assert response.status == 200
    expect_strict(response)
    counter = page.locator(".action-counter")
    expect(counter).to_have_text("0 of 1 selected")
    page.locator("input.action-select").first.check()
    expect(counter).to_have_text("1 of 1 selected")  # admin/js/actions.js counts the ticked rows
    assert refusals == []


def test_an_inline_script_is_refused_and_reported(
    page: Page, refusals: list[str], demo_holder: DemoHolder, sign_in_as: Callable[[Any], None]
) -> None:
    """The check above can see a refusal: a script put into the page, as an injection would, does not run."""
    sign_in_as(demo_holder.user)
    page.goto("/dashboard/")

    page.evaluate(
        """() => {
            const script = document.createElement("script");
            script.textContent = "window.injected = true";
            document.body.append(script);
        }"""
    )

    assert page.evaluate("window.injected") is None
    assert len(refusals) == 1
    assert "inline script" in refusals[0]
    assert "'script-src 'self''" in refusals[0]
