"""Every page a person sees, for the phone-width test and `make screenshots`: a new page goes in PAGES."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from playwright.sync_api import Locator, Page, expect

from customer_webhooks.models import App
from customer_webhooks.portal import portal_link_create
from tests.browser.demo import DEMO_APP_ID, DEMO_JOB_ID, DEMO_MESSAGE_ID, DEMO_TEMPLATE_ALIAS, DEMO_TEMPLATE_DATA

# The narrowest screen the pages are checked at: a phone's.
PHONE_WIDTH = 390


def _show_new_api_key(page: Page) -> None:
    """Creates a key, so the page shows it once above the list of keys."""
    page.get_by_label("Name", exact=True).fill("CI")
    page.get_by_label("Scope", exact=True).select_option(label="Send only")
    page.get_by_role("button", name="Create API key").click()
    expect(page.locator("code#new-api-key")).to_be_visible()


def _open_demo_template(page: Page) -> None:
    """From the templates list (a template's URL holds its id, which each run makes anew), its edit page."""
    page.get_by_role("link", name=DEMO_TEMPLATE_ALIAS).click()
    expect(page.get_by_role("heading", name=f"Template {DEMO_TEMPLATE_ALIAS}")).to_be_visible()


def _preview_demo_template(page: Page) -> None:
    """The demo template previewed with sample data: the rendered subject, frame and text."""
    _open_demo_template(page)
    page.get_by_role("link", name="Preview and test").click()
    page.get_by_label("Sample data (JSON)").fill(DEMO_TEMPLATE_DATA)
    page.get_by_role("button", name="Preview", exact=True).click()
    frame = page.locator("iframe.preview-frame")
    expect(page.frame_locator("iframe.preview-frame").get_by_role("heading", name="Hello Ada")).to_be_visible()
    # Chromium paints a sandboxed frame's document once it has been on screen; a full-page screenshot alone does not.
    frame.scroll_into_view_if_needed()


def _open_demo_endpoint(page: Page) -> None:
    """From the demo app's page (an endpoint's URL holds its id, which each run makes anew), its first endpoint."""
    page.get_by_role("link", name="https://hooks.acme.example.com/notifyhub").click()
    expect(page.get_by_role("heading", name="Endpoint https://hooks.acme.example.com/notifyhub")).to_be_visible()


def _reveal_demo_secret(page: Page) -> None:
    """The demo endpoint's secret, revealed by its button."""
    _open_demo_endpoint(page)
    page.get_by_role("button", name="Reveal secret").click()
    expect(page.locator("code#endpoint-secret")).to_be_visible()


def _make_portal_link(page: Page) -> None:
    """A new portal link of the demo app, made by its button and shown once."""
    page.get_by_role("button", name="Portal link").click()
    expect(page.get_by_role("heading", name="Portal link")).to_be_visible()


@dataclass(frozen=True)
class PageSpec:
    name: str
    path: str
    signed_in: bool
    # What to do once the page is open, before it is looked at (e.g. press a button to show a secret).
    then: Callable[[Page], None] | None = None
    # A consumer portal page: a portal link of the demo app is opened first, for the portal's session.
    portal: bool = False

    def __str__(self) -> str:
        return self.name


PAGES = [
    PageSpec("landing", "/", signed_in=False),
    PageSpec("signup", "/signup/", signed_in=False),
    PageSpec("login", "/login/", signed_in=False),
    PageSpec("password-reset", "/password-reset/", signed_in=False),
    PageSpec("dashboard", "/dashboard/", signed_in=True),
    PageSpec("jobs", "/dashboard/jobs/", signed_in=True),
    PageSpec("job", f"/dashboard/jobs/{DEMO_JOB_ID}/", signed_in=True),
    PageSpec("api-key", "/dashboard/api-key/", signed_in=True, then=_show_new_api_key),
    PageSpec("providers", "/dashboard/providers/", signed_in=True),
    PageSpec("domain", "/dashboard/domain/", signed_in=True),
    PageSpec("webhooks", "/dashboard/webhooks/", signed_in=True),
    PageSpec("suppressions", "/dashboard/suppressions/", signed_in=True),
    PageSpec("events", "/dashboard/events/", signed_in=True),
    PageSpec("endpoints", "/dashboard/endpoints/", signed_in=True),
    PageSpec("templates", "/dashboard/templates/", signed_in=True),
    PageSpec("template", "/dashboard/templates/", signed_in=True, then=_open_demo_template),
    PageSpec("template-preview", "/dashboard/templates/", signed_in=True, then=_preview_demo_template),
    PageSpec("apps", "/dashboard/apps/", signed_in=True),
    PageSpec("app", f"/dashboard/apps/{DEMO_APP_ID}/", signed_in=True),
    PageSpec("app-endpoint", f"/dashboard/apps/{DEMO_APP_ID}/", signed_in=True, then=_open_demo_endpoint),
    PageSpec("app-endpoint-secret", f"/dashboard/apps/{DEMO_APP_ID}/", signed_in=True, then=_reveal_demo_secret),
    PageSpec("app-message", f"/dashboard/apps/{DEMO_APP_ID}/messages/{DEMO_MESSAGE_ID}/", signed_in=True),
    PageSpec("app-portal-link", f"/dashboard/apps/{DEMO_APP_ID}/", signed_in=True, then=_make_portal_link),
    PageSpec("app-portal-revoke", f"/dashboard/apps/{DEMO_APP_ID}/portal-revoke/", signed_in=True),
    PageSpec("portal", "/portal/", signed_in=False, portal=True),
    PageSpec("portal-endpoint", "/portal/", signed_in=False, portal=True, then=_open_demo_endpoint),
    PageSpec("portal-endpoint-secret", "/portal/", signed_in=False, portal=True, then=_reveal_demo_secret),
    PageSpec("portal-message", f"/portal/messages/{DEMO_MESSAGE_ID}/", signed_in=False, portal=True),
    PageSpec("account", "/dashboard/account/", signed_in=True),
    PageSpec("audit", "/dashboard/audit/", signed_in=True),
    PageSpec("password-change", "/dashboard/account/password/", signed_in=True),
    PageSpec("account-delete", "/dashboard/account/delete/", signed_in=True),
]


def open_page(page: Page, spec: PageSpec) -> None:
    """Opens the page (the caller signed in first when ``spec.signed_in``) and checks it is itself, styled."""
    if spec.portal:
        portal_open(page, App.objects.get(id=DEMO_APP_ID))
    response = page.goto(spec.path)
    assert response is not None
    assert response.status == 200, f"{spec.path} answered {response.status}"
    assert page.url.endswith(spec.path), f"{spec.path} went to {page.url}"
    if spec.then is not None:
        spec.then(page)
    expect_styled(page)


def portal_open(page: Page, app: App) -> None:
    """Follows a new portal link of ``app``, as its customer would: the page lands on the portal with its session."""
    page.goto(urlsplit(portal_link_create(app=app).url).path)
    expect(page).to_have_url(re.compile(r"/portal/$"))


def expect_styled(page: Page) -> None:
    """The stylesheet arrived: the header has its dark background instead of the browser's transparent one."""
    background = page.locator("header.site-header").evaluate("header => getComputedStyle(header).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent"), "notifyhub.css did not load"


def overflowing_elements(page: Page, width: int) -> list[str]:
    """The innermost elements that reach past ``width`` pixels, as tag#id.class, for the failure message."""
    return list(
        page.evaluate(
            """width => [...document.querySelectorAll('body *')]
                .filter(el => el.getBoundingClientRect().right > width + 0.5)
                .filter(el => ![...el.children].some(child => child.getBoundingClientRect().right > width + 0.5))
                .slice(0, 10)
                .map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
                     + [...el.classList].map(c => '.' + c).join('')
                     + ' (right edge ' + Math.round(el.getBoundingClientRect().right) + 'px)')""",
            width,
        )
    )


def expect_no_sideways_scrolling(page: Page, width: int) -> None:
    """At a phone's width nothing reaches past the screen's edge, nor past a table's card (its buttons in reach)."""
    if width > PHONE_WIDTH:
        return
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    past_the_edge = overflowing_elements(page, width) if scroll_width > width else []
    assert scroll_width <= width, f"{page.url} is {scroll_width}px wide at {width}px: {past_the_edge}"
    for wrap in page.locator(".table-wrap").all():
        assert wrap.evaluate("element => element.scrollWidth <= element.clientWidth")


def expect_whole_on_screen(element: Locator, width: int) -> None:
    """``element`` is shown whole: inside the screen's ``width``, with nothing of it cut off or scrolled to."""
    expect(element).to_be_visible()
    box = element.bounding_box()
    assert box is not None
    left, right = box["x"], box["x"] + box["width"]
    assert left >= 0, f"{element} starts {left}px left of the screen"
    assert right <= width + 0.5, f"{element} ends at {right}px on a screen {width}px wide"
    assert element.evaluate("element => element.scrollWidth <= element.clientWidth"), f"{element} overflows"


def expect_table_layout(table: Locator, *, stacked: bool) -> None:
    """A table.stacked is a table with its header row, or (on a phone) its rows are blocks of labelled values."""
    cell_display = table.locator("td").first.evaluate("cell => getComputedStyle(cell).display")
    if stacked:
        assert cell_display == "block"
        expect(table.locator("thead")).to_be_hidden()
        label = table.locator("td").first.evaluate("cell => getComputedStyle(cell, '::before').content")
        assert label == f'"{table.locator("td").first.get_attribute("data-label")}"'
    else:
        assert cell_display == "table-cell"
        expect(table.locator("thead")).to_be_visible()
