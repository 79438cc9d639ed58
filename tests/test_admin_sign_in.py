"""Staff sign-in resists guessing without letting one person's guessing lock out another (docs/dashboard.md, "Limits").

Wrong passwords count per (network, username): the 11th within 15 minutes is refused. A network has 50 wrong tries an
hour across usernames. A username with 10 wrong tries from anywhere is under attack: the networks that guessed wrong
for it wait, and a network that did not signs in as usual.
"""

from __future__ import annotations

import itertools
import logging
import re
from typing import Any

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


def test_wrong_passwords_from_many_addresses_never_lock_out_a_clean_address(staff_email: str) -> None:
    for _ in range(10):
        sign_in(Browser(), staff_email, "wrong", new_address())

    assert sign_in(Browser(), staff_email, PASSWORD, new_address()).status_code == 302  # type: ignore[attr-defined]


def test_an_address_that_guessed_wrong_waits_while_its_username_is_under_attack(staff_email: str) -> None:
    guessers = [new_address() for _ in range(10)]
    for address in guessers:
        sign_in(Browser(), staff_email, "wrong", address)

    assert sign_in(Browser(), staff_email, PASSWORD, guessers[0]).status_code == 429  # type: ignore[attr-defined]


def test_one_staff_members_guessing_leaves_colleagues_at_the_same_address_alone(
    staff_email: str, django_user_model: type
) -> None:
    colleague = f"colleague-{staff_email}"
    django_user_model.objects.create_superuser(colleague, colleague, PASSWORD)  # type: ignore[attr-defined]
    office = new_address()
    for _ in range(12):
        sign_in(Browser(), staff_email, "wrong", office)

    assert sign_in(Browser(), staff_email, PASSWORD, office).status_code == 429  # type: ignore[attr-defined]
    assert sign_in(Browser(), colleague, PASSWORD, office).status_code == 302  # type: ignore[attr-defined]


def test_one_address_is_limited_across_usernames_after_fifty_wrong_passwords(staff_email: str) -> None:
    address = new_address()
    for number in range(49):
        sign_in(Browser(), f"guess{number}-{staff_email}", "wrong", address)
    assert sign_in(Browser(), staff_email, PASSWORD, address).status_code == 302  # type: ignore[attr-defined]

    sign_in(Browser(), f"guess49-{staff_email}", "wrong", address)

    assert sign_in(Browser(), staff_email, PASSWORD, address).status_code == 429  # type: ignore[attr-defined]


def test_without_a_trusted_proxy_a_forwarded_for_header_changes_nothing(staff_email: str) -> None:
    address = new_address()
    for _ in range(10):
        Browser().post(
            "/admin/login/?next=/admin/",
            {"username": staff_email, "password": "wrong"},
            REMOTE_ADDR=address,
            HTTP_X_FORWARDED_FOR=new_address(),
        )

    assert sign_in(Browser(), staff_email, PASSWORD, address).status_code == 429  # type: ignore[attr-defined]


def test_behind_one_trusted_proxy_each_client_address_counts_apart(staff_email: str, settings: Any) -> None:
    settings.TRUSTED_PROXY_HOPS = 1
    proxy, guesser, owner = new_address(), new_address(), new_address()

    def through_proxy(client: str, password: str) -> Any:
        return Browser().post(
            "/admin/login/?next=/admin/",
            {"username": staff_email, "password": password},
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=f"203.0.113.9, {client}",  # the left entry is the client's own writing
        )

    for _ in range(10):
        through_proxy(guesser, "wrong")

    assert through_proxy(guesser, PASSWORD).status_code == 429
    assert through_proxy(owner, PASSWORD).status_code == 302


def test_nine_wrong_passwords_still_let_the_right_one_in(staff_email: str) -> None:
    browser, address = Browser(), new_address()
    for _ in range(9):
        sign_in(browser, staff_email, "wrong", address)

    signed_in = sign_in(browser, staff_email, PASSWORD, address)

    assert signed_in.status_code == 302  # type: ignore[attr-defined]
    assert browser.session["_auth_user_id"]
