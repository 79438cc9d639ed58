"""The suppressions page: the account's list searched and paged, adding an address, removing one after a question."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account
from suppressions.models import Suppression, SuppressionReason
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text

Holder = tuple[Browser, Account]


def suppress(account: Account, email: str, reason: str = SuppressionReason.MANUAL, **fields: Any) -> Suppression:
    return Suppression.objects.create(account=account, email=email, reason=reason, **fields)


def listed(response: Any) -> list[str]:
    """The addresses the list shows, in its order."""
    return re.findall(r'<td class="address">([^<]+)</td>', response.content.decode())


def stored(account: Account) -> list[tuple[str, str]]:
    return sorted(Suppression.objects.filter(account=account).values_list("email", "reason"))


# --- the list ---------------------------------------------------------------------------------------


def test_the_page_needs_a_signed_in_holder(browser: Browser, free: Client) -> None:
    suppress(free.account, "ada@example.com")

    for path in ["/dashboard/suppressions/", "/dashboard/suppressions/remove/?email=ada@example.com"]:
        response = browser.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=/dashboard/suppressions/")
    removal = browser.post("/dashboard/suppressions/remove/", {"email": "ada@example.com"})
    assert (removal.status_code, removal["Location"]) == (302, "/login/?next=/dashboard/suppressions/remove/")
    assert stored(free.account) == [("ada@example.com", "MANUAL")]


def test_the_list_shows_only_the_holders_addresses_newest_first_with_their_origin(holder: Holder, free: Client) -> None:
    browser, account = holder
    now = timezone.now()
    job_id = uuid.uuid4()
    suppress(
        account,
        "bounced@example.com",
        SuppressionReason.HARD_BOUNCE,
        provider="POSTMARK",
        job_id=job_id,
        created_at=now - timedelta(days=1),
    )
    suppress(account, "by-hand@example.com", created_at=now)
    suppress(free.account, "theirs@example.com")

    page = browser.get("/dashboard/suppressions/")
    text = page_text(page)

    assert page.status_code == 200
    assert listed(page) == ["by-hand@example.com", "bounced@example.com"]
    assert "theirs@example.com" not in text
    assert "2 addresses, newest first." in text
    assert "Address Topic Reason Provider Job Added (UTC) Actions" in text
    assert "by-hand@example.com Every email Added by hand — — " in text
    assert f"bounced@example.com Every email Hard bounce Postmark {str(job_id)[:8]}… " in text
    assert f'href="/dashboard/jobs/{job_id}/"' in page_html(page)
    assert "Page 1 of 1" in text


def test_the_page_says_what_the_list_does(holder: Holder) -> None:
    browser, _ = holder

    text = page_text(browser.get("/dashboard/suppressions/"))

    assert (
        "NotifyHub sends no email to the addresses on this list: an email to one is accepted, then fails at once, "
        "without any provider call, and counts against your quota as any send does." in text
    )
    assert "removing an address lets it receive email again." in text
    assert "No address is suppressed yet." in text


def test_the_navigation_marks_the_page_as_current(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.com")
    link = '<a href="/dashboard/suppressions/" aria-current="page">Suppressions</a>'

    assert link in page_html(browser.get("/dashboard/suppressions/"))
    assert link in page_html(browser.get("/dashboard/suppressions/remove/", {"email": "ada@example.com"}))
    assert link not in page_html(browser.get("/dashboard/jobs/"))
    assert '<a href="/dashboard/suppressions/">Suppressions</a>' in page_html(browser.get("/dashboard/jobs/"))


def test_the_search_finds_addresses_containing_the_text_in_any_case(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.org")
    suppress(account, "grace@example.org", SuppressionReason.SPAM_REPORT)
    suppress(account, "ada@example.com")

    found = browser.get("/dashboard/suppressions/", {"q": "EXAMPLE.ORG"})

    assert found.status_code == 200
    assert sorted(listed(found)) == ["ada@example.org", "grace@example.org"]
    assert 'value="EXAMPLE.ORG"' in page_html(found)
    assert "Show all addresses" in page_text(found)


def test_the_reason_filter_alone_and_with_the_search(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.org", SuppressionReason.SPAM_REPORT)
    suppress(account, "grace@example.com", SuppressionReason.SPAM_REPORT)
    suppress(account, "alan@example.org", SuppressionReason.UNSUBSCRIBED)

    by_reason = browser.get("/dashboard/suppressions/", {"reason": "SPAM_REPORT"})
    both = browser.get("/dashboard/suppressions/", {"reason": "SPAM_REPORT", "q": ".org"})
    none = browser.get("/dashboard/suppressions/", {"reason": "HARD_BOUNCE"})

    assert sorted(listed(by_reason)) == ["ada@example.org", "grace@example.com"]
    assert '<option value="SPAM_REPORT" selected>Spam complaint</option>' in page_html(by_reason)
    assert listed(both) == ["ada@example.org"]
    assert listed(none) == []
    assert "No addresses match. Show all addresses" in page_text(none)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"reason": "BOUNCED"}, "Select a valid choice. BOUNCED is not one of the available choices."),
        ({"page": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"page": "9" * 19}, "Ensure this value is less than or equal to 999999999."),
    ],
)
def test_a_bad_filter_is_400_and_says_why(holder: Holder, query: dict[str, str], message: str) -> None:
    browser, account = holder
    suppress(account, "ada@example.com")

    page = browser.get("/dashboard/suppressions/", query)

    assert page.status_code == 400
    assert message in page_text(page)
    assert listed(page) == []


def test_the_list_pages_by_25_keeping_the_filters(holder: Holder) -> None:
    browser, account = holder
    now = timezone.now()
    spam = [
        suppress(
            account, f"user{n:02}@example.com", SuppressionReason.SPAM_REPORT, created_at=now - timedelta(minutes=n)
        )
        for n in range(27)
    ]
    suppress(account, "newest@example.com", created_at=now + timedelta(minutes=1))  # filtered out
    expected = [suppression.email for suppression in spam]

    first = browser.get("/dashboard/suppressions/", {"reason": "SPAM_REPORT"})
    second = browser.get("/dashboard/suppressions/", {"reason": "SPAM_REPORT", "page": "2"})
    past_the_end = browser.get("/dashboard/suppressions/", {"reason": "SPAM_REPORT", "page": "3"})

    assert listed(first) == expected[:25]
    assert 'href="?reason=SPAM_REPORT&amp;page=2" rel="next"' in page_html(first)
    assert 'rel="prev"' not in page_html(first)
    assert "27 addresses, newest first. " in page_text(first)
    assert "Page 1 of 2" in page_text(first)
    assert listed(second) == expected[25:]
    assert 'href="?reason=SPAM_REPORT&amp;page=1" rel="prev"' in page_html(second)
    assert 'rel="next"' not in page_html(second)
    assert (past_the_end.status_code, listed(past_the_end)) == (200, [])
    assert "No addresses match." in page_text(past_the_end)


# --- adding -----------------------------------------------------------------------------------------


def test_adding_an_address_stores_it_by_hand_in_lower_case_and_lists_it(holder: Holder) -> None:
    browser, account = holder

    answer = browser.post("/dashboard/suppressions/", {"email": "  Ada@Example.com "}, follow=True)

    assert answer.redirect_chain == [("/dashboard/suppressions/", 302)]
    assert stored(account) == [("ada@example.com", "MANUAL")]
    text = page_text(answer)
    assert "ada@example.com is on the suppression list: emails to it now fail at once." in text
    assert listed(answer) == ["ada@example.com"]
    assert "ada@example.com Every email Added by hand — —" in text


def test_adding_an_address_already_on_the_list_says_so_and_keeps_the_input(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.com", SuppressionReason.HARD_BOUNCE, provider="SENDGRID")

    answer = browser.post("/dashboard/suppressions/", {"email": "ADA@example.com"})

    assert answer.status_code == 400
    assert "Address is already suppressed" in page_text(answer)
    assert 'value="ADA@example.com"' in page_html(answer)
    assert stored(account) == [("ada@example.com", "HARD_BOUNCE")]


@pytest.mark.parametrize(
    ("email", "message"),
    [
        ("", "Enter the email address to suppress."),
        ("not an address", "Enter a full email address at a public domain, such as ada@example.com."),
        ("ada@localhost", "Enter a full email address at a public domain, such as ada@example.com."),
        ("ada@127.0.0.1", "Enter a full email address at a public domain, such as ada@example.com."),
        (f"{'a' * 250}@example.com", "Ensure this value has at most 254 characters (it has 262)."),
    ],
)
def test_an_invalid_address_is_refused_on_its_field(holder: Holder, email: str, message: str) -> None:
    browser, account = holder

    answer = browser.post("/dashboard/suppressions/", {"email": email})

    assert answer.status_code == 400
    assert f'<ul class="errorlist" id="id_email_error" role="alert"><li>{message}</li>' in page_html(answer)
    assert stored(account) == []


def test_adding_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)

    assert browser.post("/dashboard/suppressions/", {"email": "ada@example.com"}).status_code == 403
    assert stored(startup.account) == []


# --- removing ---------------------------------------------------------------------------------------


def test_remove_asks_first_and_removes_only_once_confirmed(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.com", SuppressionReason.UNSUBSCRIBED, provider="RESEND")
    assert 'action="/dashboard/suppressions/remove/"' in page_html(browser.get("/dashboard/suppressions/"))

    question = browser.get("/dashboard/suppressions/remove/", {"email": "ADA@example.com"})

    assert question.status_code == 200
    text = page_text(question)
    assert (
        "Remove this address from the suppression list? Once it is removed, NotifyHub sends email to it again," in text
    )
    assert "ada@example.com Unsubscribed · on the list since " in text
    assert '<input type="hidden" name="email" value="ada@example.com">' in page_html(question)
    assert stored(account) == [("ada@example.com", "UNSUBSCRIBED")]

    answer = browser.post("/dashboard/suppressions/remove/", {"email": "ada@example.com"}, follow=True)

    assert answer.redirect_chain == [("/dashboard/suppressions/", 302)]
    assert "ada@example.com is off the suppression list: emails to it are sent again." in page_text(answer)
    assert listed(answer) == []
    assert stored(account) == []


def test_another_accounts_address_cannot_be_removed(holder: Holder, free: Client) -> None:
    browser, _ = holder
    suppress(free.account, "theirs@example.com")

    question = browser.get("/dashboard/suppressions/remove/", {"email": "theirs@example.com"}, follow=True)
    answer = browser.post("/dashboard/suppressions/remove/", {"email": "theirs@example.com"}, follow=True)

    assert question.redirect_chain == [("/dashboard/suppressions/", 302)]
    assert "Suppression not found" in page_text(question)
    assert "Remove this address" not in page_text(question)
    assert answer.redirect_chain == [("/dashboard/suppressions/", 302)]
    assert "Suppression not found" in page_text(answer)
    assert stored(free.account) == [("theirs@example.com", "MANUAL")]


def test_removing_an_address_already_gone_says_so(holder: Holder) -> None:
    browser, _ = holder

    answer = browser.post("/dashboard/suppressions/remove/", {"email": "gone@example.com"}, follow=True)

    assert answer.redirect_chain == [("/dashboard/suppressions/", 302)]
    assert "Suppression not found" in page_text(answer)


def test_removing_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)
    suppress(startup.account, "ada@example.com")

    assert browser.post("/dashboard/suppressions/remove/", {"email": "ada@example.com"}).status_code == 403
    assert stored(startup.account) == [("ada@example.com", "MANUAL")]


def test_an_address_with_a_nul_is_not_found_on_the_question_or_the_removal(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.com")

    question = browser.get("/dashboard/suppressions/remove/", {"email": "ada\0@example.com"}, follow=True)
    answer = browser.post("/dashboard/suppressions/remove/", {"email": "ada@example.com\0"}, follow=True)

    for response in (question, answer):
        assert response.redirect_chain == [("/dashboard/suppressions/", 302)]
        assert "Suppression not found" in page_text(response)
    assert stored(account) == [("ada@example.com", "MANUAL")]


# --- topics -----------------------------------------------------------------------------------------


def test_the_list_shows_and_filters_topics(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.com")
    suppress(account, "ada@example.com", SuppressionReason.UNSUBSCRIBED, topic="weekly-digest")
    suppress(account, "grace@example.com", topic="news")

    everything = page_text(browser.get("/dashboard/suppressions/"))
    digest = browser.get("/dashboard/suppressions/", {"topic": "weekly-digest"})

    assert "ada@example.com weekly-digest Unsubscribed" in everything
    assert "ada@example.com Every email Added by hand" in everything
    assert listed(digest) == ["ada@example.com"]
    assert "weekly-digest Unsubscribed" in page_text(digest)
    refused = browser.get("/dashboard/suppressions/", {"topic": "Weekly Digest"})
    assert refused.status_code == 400
    assert "Enter a topic of 1 to 64 lower-case letters, digits, _ and -, as your sends name it." in page_text(refused)


def test_adding_and_removing_an_address_for_one_topic_leaves_its_other_entries(holder: Holder) -> None:
    browser, account = holder
    suppress(account, "ada@example.com")

    added = browser.post("/dashboard/suppressions/", {"email": "Ada@example.com", "topic": "news"}, follow=True)

    assert "ada@example.com (topic news) is on the suppression list: emails to it on this topic now fail at once." in (
        page_text(added)
    )
    assert set(Suppression.objects.values_list("email", "topic")) == {
        ("ada@example.com", "news"),
        ("ada@example.com", None),
    }
    question = browser.get("/dashboard/suppressions/remove/", {"email": "ada@example.com", "topic": "news"})
    assert "ada@example.com · topic news Added by hand" in page_text(question)
    assert '<input type="hidden" name="topic" value="news">' in page_html(question)

    entry = {"email": "ada@example.com", "topic": "news"}
    removed = browser.post("/dashboard/suppressions/remove/", entry, follow=True)

    assert "ada@example.com (topic news) is off the suppression list: emails to it on this topic are sent again." in (
        page_text(removed)
    )
    assert list(Suppression.objects.values_list("email", "topic")) == [("ada@example.com", None)]
