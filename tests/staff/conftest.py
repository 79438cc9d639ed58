from __future__ import annotations

from typing import Any

import pytest

from tests.clients import APIClient


@pytest.fixture
def staff_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops")


@pytest.fixture
def staff(staff_user: Any) -> APIClient:
    """Signed in to the admin, sending its CSRF token as the admin's pages do."""
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(staff_user)
    browser.get("/admin/")  # sets the CSRF cookie
    browser.defaults["HTTP_X_CSRFTOKEN"] = browser.cookies["csrftoken"].value
    return browser
