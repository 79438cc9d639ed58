"""`make screenshots`: every page of tests/browser/pages.py, 1280 and 390 px wide, in var/screenshots/.

Each page is saved whole (full-page) as ``var/screenshots/<page>-<width>.png``, signed in where it needs it as the
paid demo holder of tests/browser/demo.py. It runs under pytest, for the live server, a throw-away test database
and the browser fixture of tests/browser/conftest.py:

    .venv/bin/pytest tests/browser/screenshots.py            # what `make screenshots` runs
    .venv/bin/pytest tests/browser/screenshots.py -k domain  # one page

Its file name does not match ``test_*.py``, so the test suite leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import Page

from tests.browser.demo import DemoHolder
from tests.browser.pages import PAGES, PageSpec, open_page

pytestmark = pytest.mark.browser

WIDTHS = (1280, 390)
HEIGHT = 900  # the first screenful; the picture takes the whole page


def screenshot_dir() -> Path:
    path = Path(settings.BASE_DIR) / "var" / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("spec", PAGES, ids=str)
def test_screenshot(spec: PageSpec, page: Page, demo_holder: DemoHolder, sign_in_as: Callable[[Any], None]) -> None:
    if spec.signed_in:
        sign_in_as(demo_holder.user)
    open_page(page, spec)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.screenshot(path=screenshot_dir() / f"{spec.name}-{width}.png", full_page=True)
