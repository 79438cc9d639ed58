"""The audit log page: the account's changes, newest first, 25 a page, never another account's."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account, AuditEntry
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text

Holder = tuple[Browser, Account]
PAGE = "/dashboard/audit/"


def record(account: Account, target: str, *, minutes_ago: int, **fields: Any) -> AuditEntry:
    entry = {"action": "suppression.added", "actor": "holder", "ip": "203.0.113.7", **fields}
    return AuditEntry.objects.create(
        account=account, target=target, created_at=timezone.now() - timedelta(minutes=minutes_ago), **entry
    )


def listed(response: Any) -> list[str]:
    """The targets the table shows, in its order."""
    return re.findall(r'<td class="target">([^<]+)</td>', response.content.decode())


@pytest.fixture
def quiet_holder(holder: Holder) -> Holder:
    """A signed-in holder whose log is empty (the first key's entry forgotten)."""
    AuditEntry.objects.filter(account=holder[1]).delete()
    return holder


def test_the_page_needs_a_signed_in_holder(browser: Browser) -> None:
    response = browser.get(PAGE)

    assert (response.status_code, response["Location"]) == (302, "/login/?next=/dashboard/audit/")


def test_the_page_lists_the_holders_changes_newest_first_and_no_other_accounts(
    quiet_holder: Holder, free: Client
) -> None:
    browser, account = quiet_holder
    record(account, "ada@example.com", minutes_ago=5)
    record(account, "SENDGRID", minutes_ago=1, action="provider_key.added", actor="staff:ops@notifyhub.local", ip=None)
    record(free.account, "theirs@example.com", minutes_ago=0)

    page = browser.get(PAGE)

    text = page_text(page)
    assert page.status_code == 200
    assert listed(page) == ["SENDGRID", "ada@example.com"]
    assert "2 changes, newest first." in text
    assert "Provider key added" in text
    assert "staff:ops@notifyhub.local —" in text  # no address: shown as a dash
    assert "Suppression added" in text
    assert "holder 203.0.113.7" in text
    assert "theirs@example.com" not in text
    assert '<a href="/dashboard/audit/" aria-current="page">Audit log</a>' in page_html(page)


def test_a_change_without_a_target_shows_a_dash(quiet_holder: Holder) -> None:
    browser, account = quiet_holder
    record(account, "", minutes_ago=1, action="signing_secret.rotated")

    page = browser.get(PAGE)

    assert '<td class="target">—</td>' in page_html(page)
    assert "Signing secret rotated" in page_text(page)


def test_the_log_pages_by_25(quiet_holder: Holder) -> None:
    browser, account = quiet_holder
    for number in range(27):
        record(account, f"user{number:02}@example.com", minutes_ago=number)

    first = browser.get(PAGE)
    second = browser.get(PAGE, {"page": "2"})
    past_the_end = browser.get(PAGE, {"page": "3"})

    assert listed(first) == [f"user{number:02}@example.com" for number in range(25)]
    assert listed(second) == ["user25@example.com", "user26@example.com"]
    assert "Page 1 of 2" in page_text(first)
    assert 'href="?page=2" rel="next"' in page_html(first)
    assert "Page 2 of 2" in page_text(second)
    assert 'href="?page=1" rel="prev"' in page_html(second)
    assert 'rel="next"' not in page_html(second)
    assert "No changes on this page. Show the newest" in page_text(past_the_end)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"page": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"page": "two"}, "Enter a whole number."),
        ({"page": "9" * 19}, "Ensure this value is less than or equal to 999999999."),
    ],
)
def test_a_bad_page_is_400_and_says_why(quiet_holder: Holder, query: dict[str, str], message: str) -> None:
    browser, account = quiet_holder
    record(account, "ada@example.com", minutes_ago=1)

    page = browser.get(PAGE, query)

    assert page.status_code == 400
    assert f"Page: {message}" in page_text(page)
    assert listed(page) == []


def test_an_empty_log_says_what_will_show(quiet_holder: Holder) -> None:
    browser, _ = quiet_holder

    text = page_text(browser.get(PAGE))

    assert "No change to your account yet." in text


def test_a_change_made_on_the_dashboard_shows_who_and_from_where(quiet_holder: Holder) -> None:
    browser, _ = quiet_holder

    browser.post("/dashboard/suppressions/", {"email": "ada@example.com"}, REMOTE_ADDR="198.51.100.23")

    text = page_text(browser.get(PAGE))
    assert "Suppression added" in text
    assert "ada@example.com holder 198.51.100.23" in text
