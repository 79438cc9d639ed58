"""The page a holder sees while a service NotifyHub needs is down: styled, in the site's frame, a phone's width."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page

from tests.browser.pages import expect_styled
from tests.browser.walk import fill_sign_in
from tests.conftest import free_port

pytestmark = pytest.mark.browser

PASSWORD = "a-long-password-1"


@pytest.mark.django_db(transaction=True)
def test_sign_in_with_redis_down_shows_the_service_unavailable_page(page: Page, settings: Any) -> None:
    get_user_model().objects.create_user("ada@example.com", "ada@example.com", PASSWORD)
    # The sign-in counts' cache is a Redis where nothing listens.
    settings.CACHES = {
        **settings.CACHES,
        settings.RATELIMIT_USE_CACHE: {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        },
    }
    page.set_viewport_size({"width": 390, "height": 844})

    with page.expect_response(lambda response: response.request.method == "POST") as answer:
        fill_sign_in(page, email="ada@example.com", password=PASSWORD)

    assert (answer.value.status, answer.value.header_value("Retry-After")) == (503, "5")
    assert page.get_by_role("heading", level=1).inner_text() == "Service temporarily unavailable"
    assert page.get_by_role("link", name="Sign in").is_visible()
    assert page.get_by_role("link", name="Try again").is_visible()
    expect_styled(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
