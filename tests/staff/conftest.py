from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from tests.clients import APIClient

# What a staff user may look at in the console, and nothing they may change.
VIEW_ONLY = (
    "accounts.view_account",
    "notifications.view_job",
    "domains.view_senderdomain",
    "webhooks_inbound.view_emailevent",
    "suppressions.view_suppression",
    "event_endpoints.view_eventendpoint",
)

_staff_numbers = itertools.count(1)


def admin_session(user: Any) -> APIClient:
    """Signed in to the admin as ``user``, sending its CSRF token as the admin's pages do."""
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get("/admin/")  # sets the CSRF cookie
    browser.defaults["HTTP_X_CSRFTOKEN"] = browser.cookies["csrftoken"].value
    return browser


@pytest.fixture
def staff_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops")


@pytest.fixture
def staff(staff_user: Any) -> APIClient:
    return admin_session(staff_user)


@pytest.fixture
def make_staff(django_user_model: Any) -> Callable[..., Any]:
    """A staff user who is not a superuser, holding only the permissions named (``app_label.codename``)."""

    def make(*permissions: str) -> Any:
        email = f"staff{next(_staff_numbers)}@notifyhub.local"
        user = django_user_model.objects.create_user(email, email, "pw-for-staff", is_staff=True)
        for permission in permissions:
            app_label, codename = permission.split(".")
            user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
        return user

    return make
