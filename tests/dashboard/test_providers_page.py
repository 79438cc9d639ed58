"""The providers page: keys checked with the provider before they are saved, removed, reordered; the domain follows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account, ProviderKey
from accounts.plans import Plan
from accounts.services import provider_key_move, provider_key_remove, provider_key_set
from core.crypto import decrypt
from domains.models import DomainRegistration, DomainStatus, SenderDomain
from tests.conftest import Client, free_port
from tests.dashboard.pages import page_text
from tests.fakes.providers import FakePostmark, FakeProvider, FakeResend, FakeSendGrid
from tests.providers_fixtures import POSTMARK_ACCOUNT_TOKEN, POSTMARK_KEY, RESEND_KEY, SENDGRID_KEY

PAGE = "/dashboard/providers/"
KEYS = {"SENDGRID": SENDGRID_KEY, "RESEND": RESEND_KEY, "POSTMARK": POSTMARK_KEY}
# The request each provider checks a key with, and the header carrying the key.
KEY_CHECKS = {
    "SENDGRID": ("/v3/scopes", "Authorization", f"Bearer {SENDGRID_KEY}"),
    "RESEND": ("/domains", "Authorization", f"Bearer {RESEND_KEY}"),
    "POSTMARK": ("/server", "X-Postmark-Server-Token", POSTMARK_KEY),
}


def signed_in(account: Account) -> Browser:
    browser = Browser()
    browser.force_login(account.user)
    return browser


@pytest.fixture
def holder(startup: Client) -> Browser:
    return signed_in(startup.account)


def add_key(browser: Browser, provider: str, api_key: str, account_token: str = "", **extra: Any) -> Any:
    form = {"action": "add", "provider": provider, "api_key": api_key, "account_token": account_token}
    return browser.post(PAGE, form, **extra)


def press(browser: Browser, action: str, provider: str) -> Any:
    return browser.post(PAGE, {"action": action, "provider": provider}, follow=True)


def order(account: Account) -> list[tuple[str, int]]:
    return list(ProviderKey.objects.filter(account=account).values_list("provider", "priority"))


def with_keys(account: Account, *providers: str) -> None:
    for provider in providers:
        provider_key_set(account=account, provider=provider, api_key=KEYS[provider])


def verified_domain(account: Account, *registered: str) -> SenderDomain:
    """A domain verified with ``registered`` providers, set up in the database only."""
    domain = SenderDomain.objects.create(
        account=account, name="example.com", status=DomainStatus.VERIFIED, verified_at=timezone.now()
    )
    for provider in registered:
        DomainRegistration.objects.create(domain=domain, provider=provider, provider_domain_id="1", verified=True)
    return domain


def closed_port_url() -> str:
    """A local address nothing listens on: connecting is refused at once."""
    return f"http://127.0.0.1:{free_port()}/"


# --- the list ----------------------------------------------------------------------------------


def test_the_page_lists_the_keys_in_the_order_they_are_tried_and_never_the_keys(
    startup: Client, holder: Browser
) -> None:
    provider_key_set(account=startup.account, provider="POSTMARK", api_key=POSTMARK_KEY)
    provider_key_set(account=startup.account, provider="SENDGRID", api_key=SENDGRID_KEY, priority=1)

    response = holder.get(PAGE)

    assert response.status_code == 200
    text = page_text(response)
    assert text.index("1. SendGrid key saved") < text.index("2. Postmark key saved no account token")
    assert f"Added {timezone.now():%b} " in text
    assert "Postmark needs its account token to register your domain" in text
    content = response.content.decode()
    assert SENDGRID_KEY not in content
    assert POSTMARK_KEY not in content
    assert '<select name="provider"' in content


def test_a_postmark_key_with_its_account_token_says_the_token_is_saved(startup: Client, holder: Browser) -> None:
    provider_key_set(
        account=startup.account, provider="POSTMARK", api_key=POSTMARK_KEY, account_token=POSTMARK_ACCOUNT_TOKEN
    )

    text = page_text(holder.get(PAGE))

    assert "Postmark key saved account token saved" in text
    assert POSTMARK_ACCOUNT_TOKEN not in text


def test_a_paid_holder_without_keys_is_told_to_add_one(holder: Browser) -> None:
    assert "You have no provider key yet" in page_text(holder.get(PAGE))


def test_the_page_needs_a_signed_in_holder(db: None) -> None:
    response = Browser().get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


# --- adding a key ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["SENDGRID", "RESEND", "POSTMARK"])
def test_a_key_the_provider_accepts_is_saved_encrypted(
    startup: Client, holder: Browser, provider: str, request: pytest.FixtureRequest
) -> None:
    fake: FakeProvider = request.getfixturevalue(provider.lower())

    response = add_key(holder, provider, f"  {KEYS[provider]}\n", follow=True)

    assert response.redirect_chain == [(PAGE, 302)]
    path, header, credential = KEY_CHECKS[provider]
    (check,) = fake.calls
    assert (check.method, check.path, check.headers[header]) == ("GET", path, credential)
    (saved,) = ProviderKey.objects.filter(account=startup.account)
    assert (saved.provider, saved.priority, saved.encrypted_account_token) == (provider, 1, "")
    assert KEYS[provider] not in saved.encrypted_api_key
    assert decrypt(saved.encrypted_api_key) == KEYS[provider]  # pasted with spaces, saved without
    label = {"SENDGRID": "SendGrid", "RESEND": "Resend", "POSTMARK": "Postmark"}[provider]
    assert f"{label} accepted the key and it is saved." in page_text(response)


def test_postmarks_account_token_is_checked_on_the_domains_list_and_saved_encrypted(
    startup: Client, holder: Browser, postmark: FakePostmark
) -> None:
    response = add_key(holder, "POSTMARK", POSTMARK_KEY, POSTMARK_ACCOUNT_TOKEN)

    assert response.status_code == 302
    server, domains = postmark.calls
    assert (server.path, server.headers["X-Postmark-Server-Token"]) == ("/server", POSTMARK_KEY)
    assert "X-Postmark-Account-Token" not in server.headers
    assert (domains.method, domains.path, domains.query) == ("GET", "/domains", {"count": "1", "offset": "0"})
    assert domains.headers["X-Postmark-Account-Token"] == POSTMARK_ACCOUNT_TOKEN
    saved = ProviderKey.objects.get(account=startup.account)
    assert decrypt(saved.encrypted_account_token) == POSTMARK_ACCOUNT_TOKEN


@pytest.mark.parametrize(
    ("provider", "words"),
    [
        (
            "SENDGRID",
            "SendGrid refused this API key (401 The provided authorization grant is invalid, expired, or revoked).",
        ),
        ("RESEND", "Resend refused this API key (403 API key is invalid.)."),
        (
            "POSTMARK",
            "Postmark refused this API key (401 The Server Token you provided in the X-Postmark-Server-Token "
            "request header was invalid.",
        ),
    ],
)
def test_a_refused_key_is_not_saved_and_the_form_says_why(
    startup: Client, holder: Browser, provider: str, words: str, request: pytest.FixtureRequest
) -> None:
    fake: FakeProvider = request.getfixturevalue(provider.lower())

    response = add_key(holder, provider, "wrong-key")

    assert response.status_code == 400
    assert words in page_text(response)
    assert "Nothing was saved." in page_text(response)
    assert f'<option value="{provider}" selected>' in response.content.decode()
    assert 'value="wrong-key"' in response.content.decode()  # masked, to try again after a fix
    assert response["Cache-Control"] == "no-store"  # the page carries the typed key back
    assert not ProviderKey.objects.filter(account=startup.account).exists()
    assert len(fake.calls) == 1
    assert fake.sent == []


def test_a_resend_key_with_sending_access_only_is_refused_in_resends_words(
    startup: Client, holder: Browser, resend: FakeResend
) -> None:
    resend.accept_sending_key("re_sending_only")

    response = add_key(holder, "RESEND", "re_sending_only")

    assert response.status_code == 400
    assert "Resend refused this API key (401 This API key is restricted to only send emails.)" in page_text(response)
    assert not ProviderKey.objects.exists()


def test_a_refused_postmark_account_token_is_named_and_nothing_is_saved(
    holder: Browser, postmark: FakePostmark
) -> None:
    response = add_key(holder, "POSTMARK", POSTMARK_KEY, "wrong-token")

    assert response.status_code == 400
    assert (
        "Postmark refused this account token (401 The Account Token you provided in the X-Postmark-Account-Token "
        "request header was invalid." in page_text(response)
    )
    assert [call.path for call in postmark.calls] == ["/server", "/domains"]
    assert not ProviderKey.objects.exists()


def test_an_unreachable_provider_is_named_and_nothing_is_saved(holder: Browser, settings: Any) -> None:
    settings.SENDGRID_API_URL = closed_port_url()

    response = add_key(holder, "SENDGRID", SENDGRID_KEY)

    assert response.status_code == 400
    words = "SendGrid could not be reached (Connection refused), so the key was not checked and not saved."
    assert words in page_text(response)
    assert not ProviderKey.objects.exists()


def test_a_provider_failing_the_check_is_reported_with_a_retry(holder: Browser, sendgrid: FakeSendGrid) -> None:
    sendgrid.fail(503, endpoint="key_check")

    response = add_key(holder, "SENDGRID", SENDGRID_KEY)

    assert response.status_code == 400
    assert (
        "SendGrid could not check the key (503 internal server error), so it was not saved. Try again in a moment."
        in page_text(response)
    )
    assert not ProviderKey.objects.exists()


def test_an_account_token_for_another_provider_than_postmark_is_refused_unasked(
    holder: Browser, sendgrid: FakeSendGrid
) -> None:
    response = add_key(holder, "SENDGRID", SENDGRID_KEY, "some-token")

    assert response.status_code == 400
    assert "Only Postmark takes an account token" in page_text(response)
    assert sendgrid.calls == []
    assert not ProviderKey.objects.exists()


@pytest.mark.parametrize(
    ("form", "words"),
    [
        ({"provider": "SENDGRID", "api_key": ""}, "Paste the provider's API key."),
        ({"provider": "MAILGUN", "api_key": "key"}, "Select a valid choice. MAILGUN is not one of the available"),
    ],
)
def test_an_incomplete_form_is_refused_in_words(holder: Browser, form: dict[str, str], words: str) -> None:
    response = holder.post(PAGE, {"action": "add", **form})

    assert response.status_code == 400
    assert words in page_text(response)
    assert not ProviderKey.objects.exists()


def test_adding_a_provider_that_has_a_key_replaces_it_in_its_place(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup.account, "SENDGRID", "RESEND")
    sendgrid.accept_key("SG.new-key")

    response = add_key(holder, "SENDGRID", "SG.new-key")

    assert response.status_code == 302
    assert order(startup.account) == [("SENDGRID", 1), ("RESEND", 2)]
    assert decrypt(ProviderKey.objects.get(account=startup.account, provider="SENDGRID").encrypted_api_key) == (
        "SG.new-key"
    )


def test_a_new_provider_goes_last(startup: Client, holder: Browser, postmark: FakePostmark) -> None:
    with_keys(startup.account, "SENDGRID", "RESEND")

    add_key(holder, "POSTMARK", POSTMARK_KEY)

    assert order(startup.account) == [("SENDGRID", 1), ("RESEND", 2), ("POSTMARK", 3)]


# --- removing and reordering -------------------------------------------------------------------


def test_remove_deletes_the_key_and_says_what_follows(startup: Client, holder: Browser) -> None:
    with_keys(startup.account, "SENDGRID", "RESEND")

    response = press(holder, "remove", "SENDGRID")

    assert response.redirect_chain == [(PAGE, 302)]
    assert order(startup.account) == [("RESEND", 2)]
    assert "The SendGrid key is removed: your email no longer goes through SendGrid." in page_text(response)


def test_removing_the_last_key_says_sends_are_refused(startup: Client, holder: Browser) -> None:
    with_keys(startup.account, "RESEND")

    response = press(holder, "remove", "RESEND")

    assert not ProviderKey.objects.exists()
    assert "With no provider key left, email sends are refused until you add one." in page_text(response)


def test_removing_a_key_that_is_not_there_says_so(holder: Browser) -> None:
    assert "There was no Postmark key to remove." in page_text(press(holder, "remove", "POSTMARK"))


def test_move_up_and_down_reorder_the_keys(startup: Client, holder: Browser) -> None:
    with_keys(startup.account, "SENDGRID", "RESEND", "POSTMARK")

    moved_up = press(holder, "move-up", "POSTMARK")
    after_up = order(startup.account)
    moved_down = press(holder, "move-down", "SENDGRID")

    assert after_up == [("SENDGRID", 1), ("POSTMARK", 2), ("RESEND", 3)]
    assert order(startup.account) == [("POSTMARK", 1), ("SENDGRID", 2), ("RESEND", 3)]
    assert "Postmark moved up." in page_text(moved_up)
    assert "SendGrid moved down." in page_text(moved_down)
    text = page_text(moved_down)
    assert text.index("1. Postmark") < text.index("2. SendGrid") < text.index("3. Resend")


def test_the_first_key_cannot_move_up_nor_the_last_down(startup: Client, holder: Browser) -> None:
    with_keys(startup.account, "SENDGRID", "RESEND")

    content = holder.get(PAGE).content.decode()
    press(holder, "move-up", "SENDGRID")
    press(holder, "move-down", "RESEND")

    assert 'aria-label="Move SendGrid up"' not in content
    assert 'aria-label="Move SendGrid down"' in content
    assert 'aria-label="Move Resend up"' in content
    assert 'aria-label="Move Resend down"' not in content
    assert order(startup.account) == [("SENDGRID", 1), ("RESEND", 2)]


def test_a_move_closes_the_gaps_a_removal_left(startup: Client, holder: Browser) -> None:
    with_keys(startup.account, "SENDGRID", "RESEND", "POSTMARK")
    provider_key_remove(account=startup.account, provider="RESEND")

    press(holder, "move-up", "POSTMARK")

    assert order(startup.account) == [("POSTMARK", 1), ("SENDGRID", 2)]


def test_moving_a_provider_without_a_key_says_so(startup: Client, holder: Browser) -> None:
    with_keys(startup.account, "SENDGRID")

    response = press(holder, "move-down", "RESEND")

    assert "There is no Resend key to move." in page_text(response)
    assert order(startup.account) == [("SENDGRID", 1)]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_moves_leave_one_order_numbered_one_to_n(make_client: Any) -> None:
    account = make_client(Plan.STARTUP).account
    with_keys(account, "SENDGRID", "RESEND", "POSTMARK")
    moves = [("POSTMARK", -1), ("SENDGRID", 1), ("RESEND", -1), ("POSTMARK", 1)] * 5

    def move(step: tuple[str, int]) -> None:
        try:
            provider_key_move(account=account, provider=step[0], offset=step[1])
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(move, moves))

    assert sorted(priority for _, priority in order(account)) == [1, 2, 3]


# --- plans and accounts ------------------------------------------------------------------------


def test_the_free_plan_sees_why_and_no_form(free: Client) -> None:
    response = signed_in(free.account).get(PAGE)

    text = page_text(response)
    assert response.status_code == 200
    assert "Provider keys are for paid plans" in text
    assert "NotifyHub's own providers send your email, from noreply@" in text
    assert 'name="api_key"' not in response.content.decode()


def test_the_free_plan_cannot_add_a_key(free: Client, sendgrid: FakeSendGrid) -> None:
    response = add_key(signed_in(free.account), "SENDGRID", SENDGRID_KEY)

    assert response.status_code == 403
    assert "Provider keys are for paid plans (Indie and Startup)." in page_text(response)
    assert sendgrid.calls == []
    assert not ProviderKey.objects.exists()


def test_the_free_plan_cannot_reorder_kept_keys_but_can_remove_them(free: Client) -> None:
    with_keys(free.account, "SENDGRID", "RESEND")
    browser = signed_in(free.account)

    page = browser.get(PAGE)
    refused = press(browser, "move-up", "RESEND")
    press(browser, "remove", "SENDGRID")

    assert "These keys are kept from a paid plan" in page_text(page)
    assert "Move up" not in page.content.decode()
    assert "Provider keys are for paid plans" in page_text(refused)
    assert order(free.account) == [("RESEND", 2)]


def test_another_accounts_keys_are_never_touched(
    startup: Client, holder: Browser, make_client: Any, sendgrid: FakeSendGrid
) -> None:
    other = make_client(Plan.INDIE).account
    with_keys(other, "SENDGRID", "RESEND")
    with_keys(startup.account, "RESEND", "SENDGRID")
    sendgrid.accept_key("SG.mine")

    add_key(holder, "SENDGRID", "SG.mine")
    press(holder, "move-up", "SENDGRID")
    press(holder, "remove", "RESEND")

    assert order(startup.account) == [("SENDGRID", 1)]
    assert order(other) == [("SENDGRID", 1), ("RESEND", 2)]
    assert decrypt(ProviderKey.objects.get(account=other, provider="SENDGRID").encrypted_api_key) == SENDGRID_KEY
    assert "Resend" not in page_text(holder.get(PAGE)).split("Add a key")[0]


# --- the sending domain follows ----------------------------------------------------------------


def test_a_provider_added_after_the_domain_is_verified_is_registered_and_the_domain_waits_for_it(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup.account, "RESEND")
    domain = verified_domain(startup.account, "RESEND")

    response = add_key(holder, "SENDGRID", SENDGRID_KEY, follow=True)

    (create,) = [call for call in sendgrid.calls if call.method == "POST"]
    assert (create.path, create.json) == (
        "/v3/whitelabel/domains",
        {"domain": "em.example.com", "automatic_security": True},
    )
    registration = DomainRegistration.objects.get(domain=domain, provider="SENDGRID")
    assert registration.provider_domain_id == str(next(iter(sendgrid.domains.values()))["id"])
    assert registration.verified is False
    assert {record["type"] for record in registration.records} == {"CNAME"}
    assert all(record["provider"] == "SENDGRID" for record in registration.records)
    domain.refresh_from_db()
    assert (domain.status, domain.verified_at) == (DomainStatus.PENDING, None)
    assert (
        "Your domain example.com is now registered with SendGrid too, and is pending until SendGrid confirms it"
        in page_text(response)
    )


def test_a_replaced_key_registers_the_domain_again(startup: Client, holder: Browser, sendgrid: FakeSendGrid) -> None:
    with_keys(startup.account, "SENDGRID")
    domain = verified_domain(startup.account, "SENDGRID")

    add_key(holder, "SENDGRID", SENDGRID_KEY)

    (registration,) = DomainRegistration.objects.filter(domain=domain)
    assert registration.provider_domain_id == str(next(iter(sendgrid.domains.values()))["id"]) != "1"


def test_postmark_without_its_account_token_is_named_in_the_domains_warnings(
    startup: Client, holder: Browser, postmark: FakePostmark
) -> None:
    with_keys(startup.account, "SENDGRID")
    domain = verified_domain(startup.account, "SENDGRID")

    response = add_key(holder, "POSTMARK", POSTMARK_KEY, follow=True)

    assert [call.path for call in postmark.calls] == ["/server"]
    domain.refresh_from_db()
    assert [w["provider"] for w in domain.warnings] == ["POSTMARK"]
    assert "account token" in domain.warnings[0]["reason"]
    assert domain.status == DomainStatus.VERIFIED  # only registered providers must confirm
    assert not DomainRegistration.objects.filter(provider="POSTMARK").exists()
    assert "Postmark takes no part in your domain example.com: No account token configured" in page_text(response)


def test_postmark_with_its_account_token_is_registered_with_it(
    startup: Client, holder: Browser, postmark: FakePostmark
) -> None:
    with_keys(startup.account, "SENDGRID")
    domain = verified_domain(startup.account, "SENDGRID")

    add_key(holder, "POSTMARK", POSTMARK_KEY, POSTMARK_ACCOUNT_TOKEN)

    (create,) = [call for call in postmark.calls if call.method == "POST"]
    assert create.json["Name"] == "em.example.com"
    assert create.headers["X-Postmark-Account-Token"] == POSTMARK_ACCOUNT_TOKEN
    assert DomainRegistration.objects.filter(domain=domain, provider="POSTMARK", verified=False).exists()


def test_a_registration_the_provider_fails_keeps_the_key_and_warns(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup.account, "RESEND")
    domain = verified_domain(startup.account, "RESEND")
    sendgrid.fail(503, endpoint="domain_create")

    response = add_key(holder, "SENDGRID", SENDGRID_KEY, follow=True)

    assert order(startup.account) == [("RESEND", 1), ("SENDGRID", 2)]
    domain.refresh_from_db()
    assert domain.warnings == [{"provider": "SENDGRID", "reason": "could not register: 503 internal server error"}]
    assert not DomainRegistration.objects.filter(provider="SENDGRID").exists()
    assert "SendGrid takes no part in your domain example.com: could not register: 503" in page_text(response)


def test_without_a_domain_nothing_is_registered(holder: Browser, sendgrid: FakeSendGrid) -> None:
    add_key(holder, "SENDGRID", SENDGRID_KEY)

    assert [call.path for call in sendgrid.calls] == ["/v3/scopes"]
    assert not SenderDomain.objects.exists()
