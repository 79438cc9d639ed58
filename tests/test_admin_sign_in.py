"""Staff sign-in resists guessing: the 11th wrong try within 15 minutes, per username or per IP, is refused."""

from __future__ import annotations

import itertools
import logging
import re

import pytest
from django.test import Client as Browser

PASSWORD = "the-right-staff-password"
_unique = itertools.count(1)


@pytest.fixture
def staff_email(django_user_model: type) -> str:
    # Counts live in the shared cache for 15 minutes: each test signs in as someone new, from somewhere new.
    email = f"ops{next(_unique)}-{id(object())}@notifyhub.local"
    django_user_model.objects.create_superuser(email, email, PASSWORD)  # type: ignore[attr-defined]
    return email


def new_address() -> str:
    number = next(_unique) + id(object()) % 60000
    return f"10.{number // 65536 % 256}.{number // 256 % 256}.{number % 256}"


def sign_in(browser: Browser, username: str, password: str, address: str) -> object:
    return browser.post("/admin/login/?next=/admin/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_ten_wrong_passwords_then_the_right_one_is_refused(staff_email: str, caplog: pytest.LogCaptureFixture) -> None:
    browser, address = Browser(), new_address()
    for _ in range(10):
        assert sign_in(browser, staff_email, "wrong", address).status_code == 200  # type: ignore[attr-defined]

    with caplog.at_level(logging.WARNING, logger="core.signin"):
        refused = sign_in(browser, staff_email, PASSWORD, address)

    assert refused.status_code == 429  # type: ignore[attr-defined]
    page = refused.content.decode()  # type: ignore[attr-defined]
    assert "Too many sign-in attempts" in page
    # django-ratelimit's windows are fixed: the wait is what is left of the current one.
    wait = re.search(r"Try again in (\d+) minutes?\.", page)
    assert wait is not None
    assert 1 <= int(wait.group(1)) <= 15
    assert "_auth_user_id" not in browser.session
    assert f"Staff sign-in refused for '{staff_email}'" in caplog.text


def test_the_username_is_limited_from_any_address(staff_email: str) -> None:
    for _ in range(10):
        sign_in(Browser(), staff_email, "wrong", new_address())

    assert sign_in(Browser(), staff_email, PASSWORD, new_address()).status_code == 429  # type: ignore[attr-defined]


def test_one_address_is_limited_across_usernames(staff_email: str) -> None:
    address = new_address()
    for number in range(10):
        sign_in(Browser(), f"guess{number}-{staff_email}", "wrong", address)

    assert sign_in(Browser(), staff_email, PASSWORD, address).status_code == 429  # type: ignore[attr-defined]


def test_nine_wrong_passwords_still_let_the_right_one_in(staff_email: str) -> None:
    browser, address = Browser(), new_address()
    for _ in range(9):
        sign_in(browser, staff_email, "wrong", address)

    signed_in = sign_in(browser, staff_email, PASSWORD, address)

    assert signed_in.status_code == 302  # type: ignore[attr-defined]
    assert browser.session["_auth_user_id"]
