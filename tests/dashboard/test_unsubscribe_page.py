"""The unsubscribe page of an email sent with a topic (docs/suppressions.md, "One-click unsubscribe"): a mail
client's one-click POST, the page a person opens, and the links NotifyHub did not sign."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.core import signing
from django.test import Client as Browser

from suppressions.models import Suppression, SuppressionReason
from suppressions.unsubscribe import unsubscribe_token
from tests.conftest import Client, ready_to_send
from tests.dashboard.pages import page_html, page_text

pytestmark = pytest.mark.django_db

ONE_CLICK = {"List-Unsubscribe": "One-Click"}


def mail_client() -> Browser:
    """A mail client's POST: no session, no cookie, no CSRF token, and Django checking for one."""
    return Browser(enforce_csrf_checks=True)


def link(client: Client, email: str = "Ada@Example.com", topic: str = "weekly-digest") -> str:
    return f"/unsubscribe/{unsubscribe_token(account_id=client.account.pk, email=email, topic=topic)}/"


def entries(client: Client) -> list[tuple[str, str | None, str, str | None]]:
    rows = Suppression.objects.filter(account=client.account).order_by("email", "topic")
    return [(row.email, row.topic, row.reason, row.provider) for row in rows]


def test_a_one_click_post_unsubscribes_from_the_topic_and_answers_200_again_when_repeated(startup: Client) -> None:
    url = link(startup)

    first = mail_client().post(url, ONE_CLICK)
    again = mail_client().post(url, ONE_CLICK)

    assert (first.status_code, again.status_code) == (200, 200)
    assert first.content.decode() == "You are unsubscribed."
    assert entries(startup) == [("ada@example.com", "weekly-digest", SuppressionReason.UNSUBSCRIBED, None)]
    assert Suppression.objects.get().job_id is None


def test_the_one_click_post_also_takes_a_multipart_body(startup: Client) -> None:
    response = mail_client().post(link(startup), ONE_CLICK)  # the test client's default is multipart/form-data
    urlencoded = mail_client().post(
        link(startup, topic="news"), "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )

    assert (response.status_code, urlencoded.status_code) == (200, 200)
    assert [entry[1] for entry in entries(startup)] == ["news", "weekly-digest"]


def test_get_shows_the_sender_domain_the_topic_and_the_masked_address_and_changes_nothing(startup: Client) -> None:
    ready_to_send(startup, domain="acme.example")

    page = Browser().get(link(startup))

    assert page.status_code == 200
    text = page_text(page)
    assert "Unsubscribe from weekly-digest?" in text
    assert "acme.example sends emails on the topic weekly-digest to a***@example.com." in text
    assert "ada@example.com" not in page_html(page).lower()
    assert f'<form method="post" action="{link(startup)}">' in page_html(page)
    assert entries(startup) == []


def test_a_free_accounts_page_names_the_platforms_domain(free: Client, settings: Any) -> None:
    settings.PLATFORM_DOMAIN = "notifyhub.example"

    text = page_text(Browser().get(link(free, topic="news")))

    assert "notifyhub.example sends emails on the topic news to a***@example.com." in text


def test_the_pages_button_unsubscribes_then_resubscribe_undoes_it(startup: Client) -> None:
    browser, url = Browser(enforce_csrf_checks=True), link(startup)

    unsubscribed = browser.post(url, follow=True)

    assert unsubscribed.redirect_chain == [(url, 302)]
    assert "You are unsubscribed" in page_text(unsubscribed)
    assert "a***@example.com gets no more emails on the topic weekly-digest" in page_text(unsubscribed)
    assert entries(startup) == [("ada@example.com", "weekly-digest", "UNSUBSCRIBED", None)]
    assert f'action="{url}resubscribe/"' in page_html(unsubscribed)

    resubscribed = browser.post(f"{url}resubscribe/", follow=True)

    assert resubscribed.redirect_chain == [(url, 302)]
    assert "Unsubscribe from weekly-digest?" in page_text(resubscribed)
    assert entries(startup) == []


def test_resubscribe_never_takes_off_what_the_sender_added(startup: Client) -> None:
    Suppression.objects.create(account=startup.account, email="ada@example.com", topic="weekly-digest", reason="MANUAL")
    Suppression.objects.create(account=startup.account, email="ada@example.com", reason="HARD_BOUNCE")

    page = Browser().get(link(startup))
    answer = Browser().post(f"{link(startup)}resubscribe/")

    assert "You are unsubscribed" in page_text(page)
    assert "Resubscribe" not in page_text(page)
    assert answer.status_code == 302
    assert set(entries(startup)) == {
        ("ada@example.com", None, "HARD_BOUNCE", None),
        ("ada@example.com", "weekly-digest", "MANUAL", None),
    }


def test_the_unsubscribe_leaves_other_topics_and_other_accounts_alone(startup: Client, free: Client) -> None:
    assert mail_client().post(link(startup, topic="news"), ONE_CLICK).status_code == 200

    assert entries(startup) == [("ada@example.com", "news", "UNSUBSCRIBED", None)]
    assert entries(free) == []


def _tampered(client: Client, other: Client) -> list[str]:
    """Tokens NotifyHub did not sign as they are: each part changed, another salt's signature, made up."""
    token = unsubscribe_token(account_id=client.account.pk, email="ada@example.com", topic="news")
    payload, signature = token.split(".")

    def encoded(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")

    return [
        f"{encoded([other.account.pk, 'ada@example.com', 'news'])}.{signature}",  # moved to another account
        f"{encoded([client.account.pk, 'eve@example.com', 'news'])}.{signature}",  # to another address
        f"{encoded([client.account.pk, 'ada@example.com', 'digest'])}.{signature}",  # to another topic
        f"{payload}.{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}",
        payload,
        signing.dumps([client.account.pk, "ada@example.com", "news"]),  # signed, but not as an unsubscribe
        "not-a-token",
        "x" * 700,
        "é.ü",
    ]


def test_altered_foreign_and_random_tokens_are_404_and_change_nothing(startup: Client, free: Client) -> None:
    for number, token in enumerate(_tampered(startup, free)):
        url, network = f"/unsubscribe/{token}/", {"REMOTE_ADDR": f"10.8.0.{number}"}  # each under the limit
        page = Browser().get(url, **network)
        one_click = mail_client().post(url, ONE_CLICK, **network)
        resubscribe = mail_client().post(f"{url}resubscribe/", **network)

        assert (page.status_code, one_click.status_code, resubscribe.status_code) == (404, 404, 404), token
        assert "This unsubscribe link is not valid" in page_text(page)
    assert not Suppression.objects.exists()


def test_a_network_with_too_many_bad_links_waits_even_with_a_good_one(startup: Client) -> None:
    for number in range(20):
        assert Browser().get(f"/unsubscribe/made-up-{number}/").status_code == 404

    refused = mail_client().post(link(startup), ONE_CLICK)
    elsewhere = mail_client().post(link(startup), ONE_CLICK, REMOTE_ADDR="198.51.100.7")

    assert refused.status_code == 429
    assert "There have been too many invalid links from your network." in page_text(refused)
    assert elsewhere.status_code == 200
    assert len(entries(startup)) == 1
