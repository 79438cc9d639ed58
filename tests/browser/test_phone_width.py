"""Every page fits a phone 390 px wide: nothing makes the page scroll sideways."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.demo import DemoHolder
from tests.browser.pages import PAGES, PHONE_WIDTH, PageSpec, open_page, overflowing_elements

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("spec", PAGES, ids=str)
def test_page_fits_a_phone(
    spec: PageSpec, page: Page, demo_holder: DemoHolder, sign_in_as: Callable[[Any], None]
) -> None:
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})
    if spec.signed_in:
        sign_in_as(demo_holder.user)

    open_page(page, spec)

    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    past_the_edge = overflowing_elements(page, PHONE_WIDTH) if scroll_width > PHONE_WIDTH else []
    assert scroll_width <= PHONE_WIDTH, f"{spec.path} is {scroll_width}px wide at {PHONE_WIDTH}px: {past_the_edge}"
