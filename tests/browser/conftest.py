"""Browser tests: Debian's Chromium, driven by Playwright (sync API), against pytest-django's live server.

Fixtures:
- ``browser``: one headless Chromium for the session; missing ``/usr/bin/chromium`` fails every browser test.
- ``page``: a fresh browser context (no cookies) per test whose relative URLs go to the live server.
- ``demo_holder``: a confirmed paid account with data (tests/browser/demo.py), set up in the database only.
- ``sign_in_as``: signs a page in as a user without the sign-in form (tests/browser/walk.py has the form's walk).

Tests here are marked ``browser`` (``pytest -m browser`` selects them) and run after all other tests: while
Playwright's sync API is started, the main thread has a running asyncio loop, which the other tests must not
run beside. The walk's steps are in walk.py; the pages every page-wide check covers are in pages.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import Browser, Page, sync_playwright

from tests.browser.demo import DemoHolder, demo_holder_create

CHROMIUM = Path("/usr/bin/chromium")
INSTALL_CHROMIUM = "apt-get install -y chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Playwright waits up to 30 s by default; a page of this app answers in well under a second.
TIMEOUT_MS = 10_000


@pytest.hookimpl(trylast=True)  # after pytest-django's own ordering, which this keeps
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last: see the module's docstring."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)  # stable: order kept otherwise


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"The browser tests need Debian's Chromium at {CHROMIUM}: install it with `{INSTALL_CHROMIUM}`")
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        # Django refuses ORM calls from a thread with a running asyncio loop, and Playwright's sync API runs
        # one in the main thread. The tests' own database calls there (test data, sessions, the flush after
        # each test) are plain synchronous calls, so they are allowed while the browser is up, and only then.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, env=_chromium_environment()
        )
        yield chromium
        chromium.close()


def _chromium_environment() -> dict[str, str]:
    """Chromium keeps crash reports and GTK settings in the user's config and cache folders: var/ instead."""
    folder = Path(settings.VAR_DIR) / "chromium"
    return {**os.environ, "XDG_CONFIG_HOME": str(folder / "config"), "XDG_CACHE_HOME": str(folder / "cache")}


@pytest.fixture
def page(browser: Browser, live_server: Any, settings: Any) -> Iterator[Page]:
    """A page in a fresh context; ``page.goto("/signup/")`` opens the live server's sign-up page."""
    settings.PUBLIC_URL = live_server.url  # emailed links lead to the service, here the live server
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def demo_holder(live_server: Any) -> DemoHolder:
    return demo_holder_create()


@pytest.fixture
def sign_in_as(page: Page, live_server: Any) -> Callable[[Any], None]:
    """Gives ``page`` a session of ``user``, as the sign-in form would; for tests that are not about signing in."""

    def sign_in(user: Any) -> None:
        client = Client()
        client.force_login(user)
        session = client.cookies[settings.SESSION_COOKIE_NAME].value
        page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": live_server.url}])

    return sign_in
