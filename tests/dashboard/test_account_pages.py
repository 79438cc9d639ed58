"""Sign-up, confirmation, sign-in, password reset and change, the account, API keys and webhooks pages."""

from __future__ import annotations

import re
from datetime import datetime
from io import StringIO
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import MAX_ACTIVE_API_KEYS, Account, ApiKey, SigningSecret
from accounts.services import UNCONFIRMED_KEY_MESSAGE, api_key_create, api_key_revoke
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text
from tests.fakes.events import PostmarkEvents, SendGridEvents
from tests.fakes.providers import FakePostmark
from tests.providers_fixtures import POSTMARK_KEY
from webhooks_inbound.models import TrackingCredentials

PASSWORD = "a sound passphrase 42"


def sign_up(browser: Browser, email: str = "Ada@Example.com", password: str = PASSWORD, **extra: Any) -> Any:
    return browser.post("/signup/", {"email": email, "password": password}, **extra)


def confirmation_link() -> str:
    html = mail.outbox[-1].alternatives[0][0]  # type: ignore[attr-defined]
    found = re.search(r"http://testserver(/signup/confirm/[^\"<]+)", html)
    assert found, html
    return found.group(1)


# --- sign-up and confirmation ------------------------------------------------------------------


def test_sign_up_makes_an_unconfirmed_free_account_without_a_key_and_emails_a_link(browser: Browser) -> None:
    response = sign_up(browser)

    assert response.status_code == 302
    assert response["Location"] == "/signup/sent/"
    assert "We sent a confirmation link to ada@example.com" in page_text(browser.get("/signup/sent/"))
    account = Account.objects.get(user__email="ada@example.com")
    assert (account.plan, account.is_confirmed, account.user.username) == ("free", False, "ada@example.com")
    assert not ApiKey.objects.filter(account=account).exists()
    (message,) = mail.outbox
    assert (message.to, message.subject, message.from_email) == (
        ["ada@example.com"],
        "Confirm your NotifyHub email address",
        "noreply@notifyhub.local",
    )


def test_sign_up_mails_through_the_platforms_providers_when_there_are_some(
    browser: Browser, postmark: FakePostmark, settings: Any
) -> None:
    settings.PLATFORM_PROVIDERS = ["POSTMARK"]
    settings.PLATFORM_PROVIDER_KEYS = {"POSTMARK": POSTMARK_KEY}

    sign_up(browser)

    (call,) = postmark.sent
    assert call.json["To"] == "ada@example.com"
    assert call.json["From"] == "noreply@notifyhub.local"
    assert "/signup/confirm/" in call.json["HtmlBody"]
    assert "Metadata" not in call.json  # NotifyHub's own mail belongs to no job
    assert mail.outbox == []


def test_sign_up_says_so_when_the_email_cannot_be_sent(browser: Browser, postmark: FakePostmark, settings: Any) -> None:
    settings.PLATFORM_PROVIDERS = ["POSTMARK"]
    settings.PLATFORM_PROVIDER_KEYS = {"POSTMARK": "refused-key"}

    sign_up(browser)

    assert "the confirmation email could not be sent just now" in page_text(browser.get("/signup/sent/"))
    assert Account.objects.filter(user__email="ada@example.com").exists()


@pytest.mark.parametrize(
    ("email", "password", "error"),
    [
        ("not-an-email", PASSWORD, "Enter a valid email address."),
        ("ada@example.com", "short", "This password is too short. It must contain at least 8 characters."),
        ("ada@example.com", "password123", "This password is too common."),
        ("ada@example.com", "12345678901", "This password is entirely numeric."),
        ("", PASSWORD, "This field is required."),
    ],
)
def test_a_refused_sign_up_says_why_and_keeps_the_email(
    browser: Browser, email: str, password: str, error: str
) -> None:
    response = sign_up(browser, email, password)

    assert response.status_code == 200
    assert error in page_text(response)
    assert f'value="{email}"' in page_html(response) if email else True
    assert not Account.objects.exists()


def test_signing_up_again_with_a_confirmed_address_in_any_case_is_refused(browser: Browser) -> None:
    sign_up(browser, "ada@example.com")
    browser.post(confirmation_link(), {"password": PASSWORD})

    response = sign_up(Browser(), "ADA@example.com")

    assert "An account with this email already exists. Sign in instead." in page_text(response)
    assert Account.objects.count() == 1


def test_the_sixth_sign_up_from_one_network_within_an_hour_is_429(browser: Browser) -> None:
    answers = [sign_up(Browser(), f"user{n}@example.com").status_code for n in range(6)]

    assert answers == [302] * 5 + [429]
    assert Account.objects.count() == 5


def test_the_link_confirms_on_post_with_the_password_signs_in_and_works_once(browser: Browser) -> None:
    sign_up(browser)
    link = confirmation_link()

    shown = browser.get(link)
    assert "Confirm ada@example.com with the password you signed up with." in page_text(shown)
    assert not Account.objects.get().is_confirmed  # opening the link confirms nothing
    confirmed = browser.post(link, {"password": PASSWORD})

    assert confirmed["Location"] == "/dashboard/"
    assert Account.objects.get().is_confirmed
    assert "Your email address is confirmed" in page_text(browser.get("/dashboard/"))
    assert "This link no longer works" in page_text(Browser().get(link))
    assert Browser().post(link).status_code == 400


@pytest.mark.parametrize("mangle", [lambda link: link[:-3] + "abc/", lambda link: "/signup/confirm/zzzz/abc-def/"])
def test_a_tampered_link_is_refused(browser: Browser, mangle: Any) -> None:
    sign_up(browser)

    response = browser.post(mangle(confirmation_link()), {"password": PASSWORD})

    assert response.status_code == 400
    assert not Account.objects.get().is_confirmed


def test_an_unconfirmed_holder_signs_in_but_cannot_make_a_key_and_can_ask_for_a_new_link(browser: Browser) -> None:
    sign_up(browser)
    assert browser.post("/login/", {"username": "ada@example.com", "password": PASSWORD})["Location"] == "/dashboard/"

    page = page_text(browser.get("/dashboard/api-key/"))
    refused = browser.post("/dashboard/api-key/", {"action": "create", "name": "Default", "scope": "full"})
    resent = browser.post("/signup/confirm/resend/", follow=True)

    assert "Confirm your email address first: follow the link we emailed to ada@example.com." in page
    assert "Generate API key" not in page
    assert refused.status_code == 403
    assert UNCONFIRMED_KEY_MESSAGE in page_text(refused)
    assert not ApiKey.objects.exists()
    assert "We sent a new confirmation link to ada@example.com" in page_text(resent)
    assert len(mail.outbox) == 2
    browser.post(confirmation_link())  # signed in as its user: the session stands for the password
    assert Account.objects.get().is_confirmed


# --- nobody can take an address they do not read ------------------------------------------------


def test_the_link_alone_confirms_nothing_and_signs_no_one_in(browser: Browser) -> None:
    sign_up(browser)
    link = confirmation_link()

    without = Browser().post(link)
    wrong = Browser().post(link, {"password": "a guess at it 12"})

    assert (without.status_code, wrong.status_code) == (400, 400)
    assert "That is not your password." in page_text(wrong)
    assert "Sign up again" in page_text(wrong)
    assert not Account.objects.get().is_confirmed
    assert "_auth_user_id" not in Browser().session


def test_a_sign_up_for_an_unconfirmed_address_starts_the_account_over(browser: Browser) -> None:
    squatter = Browser()
    sign_up(squatter, password="the squatter's own 99")
    squatter.post("/login/", {"username": "ada@example.com", "password": "the squatter's own 99"})
    squatted = Account.objects.get()
    assert squatter.get("/dashboard/").status_code == 200

    again = sign_up(browser)  # the address's owner, with their own password
    browser.post(confirmation_link(), {"password": PASSWORD})

    assert again["Location"] == "/signup/sent/"
    account = Account.objects.get()
    assert (account.pk, account.user_id) != (squatted.pk, squatted.user_id)
    assert account.is_confirmed
    assert squatter.get("/dashboard/")["Location"] == "/login/?next=/dashboard/"
    refused = Browser().post("/login/", {"username": "ada@example.com", "password": "the squatter's own 99"})
    assert "Wrong email or password." in page_text(refused)


@pytest.mark.parametrize(
    ("action", "kept"),
    [("generate-signing-secret", SigningSecret), ("generate-postmark-password", TrackingCredentials)],
    ids=["signing-secret", "event-tracking-credential"],
)
def test_an_unconfirmed_account_keeps_no_settings(browser: Browser, action: str, kept: Any) -> None:
    sign_up(browser)
    browser.post("/login/", {"username": "ada@example.com", "password": PASSWORD})

    refused = browser.post("/dashboard/webhooks/", {"action": action}, follow=True)

    assert "Until then this account keeps no settings." in page_text(refused)
    assert not kept.objects.exists()


def test_emailed_links_are_built_on_public_url_whatever_the_host_header(browser: Browser, settings: Any) -> None:
    settings.PUBLIC_URL = "https://notify.example.com/"
    settings.ALLOWED_HOSTS = ["*"]  # even a Host the service accepts does not choose where the links point
    sign_up(browser, HTTP_HOST="attacker.example")
    browser.post("/password-reset/", {"email": "ada@example.com"}, HTTP_HOST="attacker.example")

    confirmation, reset = (message.alternatives[0][0] for message in mail.outbox)  # type: ignore[attr-defined]
    assert re.search(r'href="https://notify\.example\.com/signup/confirm/[^"]+/"', confirmation)
    assert re.search(r'href="https://notify\.example\.com/password-reset/[^"]+/"', reset)
    assert "attacker.example" not in confirmation + reset


# --- sign-in -----------------------------------------------------------------------------------


def test_sign_in_takes_the_email_in_any_case_and_refuses_a_wrong_password(browser: Browser) -> None:
    sign_up(browser)

    wrong = browser.post("/login/", {"username": "ada@example.com", "password": "nope"})
    right = browser.post("/login/", {"username": "ADA@example.COM", "password": PASSWORD})

    assert wrong.status_code == 200
    assert "Wrong email or password." in page_text(wrong)
    assert 'value="ada@example.com"' in page_html(wrong)
    assert right["Location"] == "/dashboard/"


def test_wrong_passwords_from_ten_networks_slow_only_those_networks(browser: Browser) -> None:
    sign_up(browser)
    # Someone guesses from ten networks: the email is then under attack, and each of those networks waits.
    guesses = [
        Browser().post("/login/", {"username": "ada@example.com", "password": "wrong"}, REMOTE_ADDR=f"10.9.0.{n}")
        for n in range(10)
    ]
    again = Browser().post("/login/", {"username": "ada@example.com", "password": PASSWORD}, REMOTE_ADDR="10.9.0.3")
    the_owner = Browser().post("/login/", {"username": "ada@example.com", "password": PASSWORD}, REMOTE_ADDR="10.9.1.1")

    assert [guess.status_code for guess in guesses] == [200] * 10
    assert again.status_code == 429
    assert re.search(r"Try again in \d+ minutes?\.", page_text(again))
    assert the_owner["Location"] == "/dashboard/"


def test_the_eleventh_wrong_password_for_one_email_from_one_network_is_429(browser: Browser) -> None:
    sign_up(browser)
    answers = [
        Browser().post("/login/", {"username": "ada@example.com", "password": "wrong"}, REMOTE_ADDR="10.9.0.1")
        for _ in range(11)
    ]

    assert [answer.status_code for answer in answers] == [200] * 10 + [429]


def test_dashboard_pages_need_a_signed_in_holder(browser: Browser) -> None:
    for path in ["/dashboard/", "/dashboard/api-key/", "/dashboard/webhooks/", "/dashboard/account/"]:
        response = browser.get(path)
        assert (response.status_code, response["Location"]) == (302, f"/login/?next={path}")


def test_staff_without_an_account_are_sent_to_the_admin(browser: Browser, django_user_model: Any) -> None:
    staff = django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", PASSWORD)
    browser.force_login(staff)

    assert browser.get("/dashboard/")["Location"] == "/admin/"


def test_the_landing_page_offers_sign_up_sign_in_and_the_docs_and_signed_in_goes_to_the_dashboard(
    browser: Browser, holder: tuple[Browser, Account]
) -> None:
    landing = page_html(browser.get("/"))

    for link in ['href="/signup/">Sign up', 'href="/login/">Sign in', 'href="/api/docs/">API docs']:
        assert link in landing
    assert holder[0].get("/")["Location"] == "/dashboard/"


# --- password reset and change -----------------------------------------------------------------


def test_password_reset_mails_a_link_that_sets_a_new_password(browser: Browser) -> None:
    sign_up(browser)
    mail.outbox.clear()

    done = browser.post("/password-reset/", {"email": "ada@example.com"})
    (message,) = mail.outbox
    link = re.search(r"http://testserver(/password-reset/[^\"<]+)", message.alternatives[0][0])  # type: ignore[attr-defined]
    assert link
    form = browser.get(link.group(1), follow=True)
    changed = browser.post(
        form.redirect_chain[-1][0], {"new_password1": "another passphrase 7", "new_password2": "another passphrase 7"}
    )

    assert done["Location"] == "/password-reset/sent/"
    assert message.subject == "Reset your NotifyHub password"
    assert changed["Location"] == "/password-reset/done/"
    assert (
        Browser().post("/login/", {"username": "ada@example.com", "password": "another passphrase 7"}).status_code
        == 302
    )


def test_a_quick_start_account_without_a_password_is_mailed_a_link_that_sets_one(browser: Browser) -> None:
    call_command("createaccount", "grace@example.com", "--plan", "startup", stdout=StringIO())
    holder = get_user_model().objects.get(email="grace@example.com")
    assert not holder.has_usable_password()

    done = browser.post("/password-reset/", {"email": "Grace@Example.com"})
    (message,) = mail.outbox
    link = re.search(r"http://testserver(/password-reset/[^\"<]+)", message.alternatives[0][0])  # type: ignore[attr-defined]
    assert link
    form = browser.get(link.group(1), follow=True)
    new = {"new_password1": "another passphrase 7", "new_password2": "another passphrase 7"}
    changed = browser.post(form.redirect_chain[-1][0], new)
    signed_in = Browser().post("/login/", {"username": "grace@example.com", "password": "another passphrase 7"})

    assert done["Location"] == "/password-reset/sent/"
    assert (message.to, message.subject) == (["grace@example.com"], "Reset your NotifyHub password")
    assert "Choose a new password" in page_text(form)
    assert changed["Location"] == "/password-reset/done/"
    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/dashboard/"
    # The link worked once.
    assert "This link no longer works" in page_text(browser.get(link.group(1), follow=True))


def test_staff_without_a_password_are_mailed_nothing(browser: Browser) -> None:
    get_user_model().objects.create_user(username="ops@example.com", email="ops@example.com", is_staff=True)

    response = browser.post("/password-reset/", {"email": "ops@example.com"})

    assert response["Location"] == "/password-reset/sent/"
    assert mail.outbox == []


def test_password_reset_for_an_unknown_address_looks_the_same_and_sends_nothing(browser: Browser) -> None:
    response = browser.post("/password-reset/", {"email": "nobody@example.com"})

    assert response["Location"] == "/password-reset/sent/"
    assert mail.outbox == []


def test_password_change_needs_the_old_password(holder: tuple[Browser, Account]) -> None:
    browser, account = holder
    account.user.set_password(PASSWORD)
    account.user.save()
    browser.force_login(account.user)
    new = {"new_password1": "another passphrase 7", "new_password2": "another passphrase 7"}

    wrong = browser.post("/dashboard/account/password/", {"old_password": "nope", **new})
    right = browser.post("/dashboard/account/password/", {"old_password": PASSWORD, **new}, follow=True)

    assert "Your old password was entered incorrectly." in page_text(wrong)
    assert "Your password is changed." in page_text(right)
    account.user.refresh_from_db()
    assert account.user.check_password("another passphrase 7")


# --- account -----------------------------------------------------------------------------------


def test_deleting_the_account_takes_the_password_then_signs_out_and_stops_the_key(
    holder: tuple[Browser, Account], startup: Client
) -> None:
    browser, account = holder
    account.user.set_password(PASSWORD)
    account.user.save()
    browser.force_login(account.user)

    wrong = browser.post("/dashboard/account/delete/", {"password": "nope"})
    deleted = browser.post("/dashboard/account/delete/", {"password": PASSWORD})

    assert wrong.status_code == 400
    assert "That is not your password." in page_text(wrong)
    assert deleted["Location"] == "/"
    account.refresh_from_db()
    assert account.deleted_at is not None
    assert not account.user.is_active
    assert browser.get("/dashboard/").status_code == 302
    assert startup.get("/api/v1/ping").status_code == 403
    signing_in = Browser().post("/login/", {"username": account.user.email, "password": PASSWORD})
    assert "Wrong email or password." in page_text(signing_in)


def test_the_account_page_shows_the_email_plan_and_customer_id(holder: tuple[Browser, Account]) -> None:
    browser, account = holder

    text = page_text(browser.get("/dashboard/account/"))

    assert account.user.email in text
    assert "Startup" in text
    assert str(account.public_id) in text


# --- API keys ----------------------------------------------------------------------------------

NEW_KEY = re.compile(r'id="new-api-key">(nh_[0-9a-f]{64})<')


def create_key(browser: Browser, name: str, scope: str = "full") -> Any:
    return browser.post("/dashboard/api-key/", {"action": "create", "name": name, "scope": scope})


def key_row(response: Any, name: str) -> str:
    """The text of the keys table's row of the key named ``name``, or "" without one."""
    rows = re.findall(r"<tr>.*?</tr>", response.content.decode(), flags=re.DOTALL)
    found = [row for row in rows if f"<strong>{name}</strong>" in row]
    return page_text(SimpleNamespace(content=found[0].encode())).strip() if found else ""


def when(moment: datetime) -> str:
    """A time as the page writes it: ``Nov 3, 2025, 14:02``."""
    return f"{moment:%b} {moment.day}, {moment:%Y, %H:%M}"


def ping(api_key: str) -> int:
    return int(Browser().get("/api/v1/ping", HTTP_X_API_KEY=api_key).status_code)


def test_the_first_key_comes_named_default_and_is_shown_once(holder: tuple[Browser, Account]) -> None:
    browser, account = holder
    api_key_revoke(account=account, name="Default")
    empty = browser.get("/dashboard/api-key/")
    assert "You have no API key yet." in page_text(empty)
    assert 'name="name" value="Default"' in page_html(empty)
    assert "Generate API key" in page_text(empty)
    assert "A test key can neither read nor change live data" in page_text(empty)
    assert '<a href="/dashboard/api-key/">Create your API key</a>' in page_html(browser.get("/dashboard/"))

    response = create_key(browser, "Default")

    new_key = NEW_KEY.search(response.content.decode())
    assert new_key
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert "Copy it now: it is shown only once." in page_text(response)
    assert ping(new_key.group(1)) == 200
    shown_later = browser.get("/dashboard/api-key/")
    assert new_key.group(1) not in page_html(shown_later)
    assert "Create API key" in page_text(shown_later)
    assert "Generate API key" not in page_text(shown_later)
    assert "Create your API key done" in page_text(browser.get("/dashboard/"))


def test_a_new_key_is_shown_once_then_listed_with_its_scope_hint_and_last_use(
    holder: tuple[Browser, Account], startup: Client
) -> None:
    browser, account = holder

    response = create_key(browser, "  CI  ", "send")

    new_key = NEW_KEY.search(response.content.decode())
    assert new_key
    assert response["Cache-Control"] == "no-store"
    assert "Your new API key CI · Send only" in page_text(response)
    assert ping(new_key.group(1)) == 200  # and the old key still works: creating revokes nothing
    assert startup.get("/api/v1/ping").status_code == 200
    listed = browser.get("/dashboard/api-key/")
    assert new_key.group(1) not in page_html(listed)
    assert "2 of 10 keys, oldest first." in page_text(listed)
    ci = ApiKey.objects.get(account=account, name="CI")
    assert ci.last_used_at is not None
    created, used = ci.created_at, ci.last_used_at
    # The name and hint, the phone's line of dates, the scope, the dates' own columns (UTC), the button.
    assert key_row(listed, "CI") == (
        f"CI {new_key.group(1)[:10]}… Created {created:%b} {created.day}, {created:%Y} · last used {when(used)} UTC "
        f"Send only {when(created)} {when(used)} Revoke"
    )
    # The answer that showed the key listed the keys too, before either was used.
    assert "last used never Full access" in key_row(response, "Default")
    assert key_row(response, "Default").endswith(" never Revoke")
    assert key_row(response, "CI").endswith(" never Revoke")


def test_revoking_a_key_stops_it_at_once_and_leaves_the_others(
    holder: tuple[Browser, Account], startup: Client
) -> None:
    browser, account = holder
    other = api_key_create(account=account, name="CI")

    response = browser.post("/dashboard/api-key/", {"action": "revoke", "name": "Default"})

    assert (response.status_code, response["Location"]) == (302, "/dashboard/api-key/")
    page = browser.get("/dashboard/api-key/")
    assert "Revoked the API key Default." in page_text(page)
    assert key_row(page, "Default") == ""
    assert key_row(page, "CI")
    assert startup.get("/api/v1/ping").status_code == 401
    assert ping(other) == 200


def test_another_accounts_key_cannot_be_revoked(holder: tuple[Browser, Account], free: Client) -> None:
    browser, account = holder
    billing = api_key_create(account=free.account, name="Billing")

    refused = browser.post("/dashboard/api-key/", {"action": "revoke", "name": "Billing"}, follow=True)
    browser.post("/dashboard/api-key/", {"action": "revoke", "name": "Default"})  # the holder's own "Default"

    assert "There is no active API key named Billing." in page_text(refused)
    assert (ping(billing), ping(free.api_key)) == (200, 200)
    assert not ApiKey.objects.filter(account=account, revoked_at__isnull=True).exists()


@pytest.mark.parametrize(
    ("name", "scope", "error"),
    [
        ("Default", "full", "An active API key is named Default already."),
        (" Default ", "read", "An active API key is named Default already."),
        ("CI\tbuild", "full", "An API key's name must be 1 to 64 characters on one line."),
        ("CI\nbuild", "full", "An API key's name must be 1 to 64 characters on one line."),
        ("", "full", "An API key's name must be 1 to 64 characters on one line."),
        ("x" * 65, "full", "An API key's name must be 1 to 64 characters on one line."),
        ("CI", "admin", "Select a valid choice. admin is not one of the available choices."),
    ],
)
def test_a_refused_key_says_why_keeps_the_input_and_makes_nothing(
    holder: tuple[Browser, Account], name: str, scope: str, error: str
) -> None:
    browser, account = holder

    response = create_key(browser, name, scope)

    assert response.status_code == 400
    assert error in page_text(response)
    assert "new-api-key" not in page_html(response)
    assert "no-store" not in response.get("Cache-Control", "")
    if name and name.isprintable():
        assert f'value="{name}"' in page_html(response)
    assert ApiKey.objects.filter(account=account, revoked_at__isnull=True).count() == 1


def test_the_eleventh_key_is_refused(holder: tuple[Browser, Account]) -> None:
    browser, account = holder
    for number in range(2, MAX_ACTIVE_API_KEYS + 1):
        api_key_create(account=account, name=f"Service {number}")

    response = create_key(browser, "One too many", "read")

    assert response.status_code == 400
    assert "An account may have at most 10 active API keys. Revoke one first." in page_text(response)
    assert 'value="One too many"' in page_html(response)
    assert "10 of 10 keys" in page_text(response)
    assert ApiKey.objects.filter(account=account, revoked_at__isnull=True).count() == MAX_ACTIVE_API_KEYS


# --- webhooks ----------------------------------------------------------------------------------


def test_the_signing_secret_is_shown_once_then_rotated_and_deleted(holder: tuple[Browser, Account]) -> None:
    browser, account = holder

    generated = browser.post("/dashboard/webhooks/", {"action": "generate-signing-secret"})
    first = re.search(r'id="signing-secret">(whsec_[0-9a-f]+)<', generated.content.decode())
    rotated = browser.post("/dashboard/webhooks/", {"action": "rotate-signing-secret"})
    second = re.search(r'id="signing-secret">(whsec_[0-9a-f]+)<', rotated.content.decode())
    later = page_text(browser.get("/dashboard/webhooks/"))

    assert first
    assert second
    assert first.group(1) != second.group(1)
    assert generated["Cache-Control"] == "no-store"
    assert second.group(1) not in later
    assert "Rotate signing secret" in later
    # The rotated-out secret signs beside the new one for a day, and the page says until when.
    until = SigningSecret.objects.get(account=account).previous_signs_until
    assert until is not None
    assert abs((until - timezone.now()).total_seconds() - 24 * 3600) < 60
    assert f"The previous secret also signs every delivery until {until:%b} {until.day}, {until:%Y, %H:%M} UTC" in later
    browser.post("/dashboard/webhooks/", {"action": "delete-signing-secret"})
    assert not SigningSecret.objects.filter(account=account).exists()
    assert "Generate signing secret" in page_text(browser.get("/dashboard/webhooks/"))


def test_event_tracking_shows_the_receiver_urls_and_sets_each_credential(
    holder: tuple[Browser, Account], settings: Any
) -> None:
    browser, account = holder
    settings.PUBLIC_URL = "https://notify.example.com"
    sendgrid = SendGridEvents()

    shown = browser.post("/dashboard/webhooks/", {"action": "generate-postmark-password"})
    password = re.search(r'id="postmark-password">([^<]+)<', shown.content.decode())
    saved = browser.post("/dashboard/webhooks/", {"action": "set-sendgrid-key", "value": sendgrid.verification_key})
    refused = browser.post("/dashboard/webhooks/", {"action": "set-resend-secret", "value": "not-a-secret"})

    assert password
    text = page_text(browser.get("/dashboard/webhooks/"))
    for slug in ("postmark", "sendgrid", "resend"):
        assert f"https://notify.example.com/api/v1/webhooks/{slug}/{account.public_id}" in text
    assert saved.status_code == 302
    assert refused.status_code == 400
    assert "The Resend signing secret must be the whsec_... secret Resend shows" in page_text(refused)
    assert 'value="not-a-secret"' in page_html(refused)
    credentials = TrackingCredentials.objects.get(account=account)
    assert credentials.sendgrid_verification_key == sendgrid.verification_key
    assert credentials.encrypted_resend_secret == ""
    # The password shown works at the Postmark receiver.
    delivery = PostmarkEvents(password.group(1)).deliver({"RecordType": "Delivery", "MessageID": "m"})
    receiver = f"/api/v1/webhooks/postmark/{account.public_id}"
    answered = Browser().post(receiver, delivery.body, content_type="application/json", headers=delivery.headers)
    assert answered.status_code == 200


def test_the_free_home_page_names_the_platform_sender(browser: Browser, free: Client, settings: Any) -> None:
    settings.PLATFORM_DOMAIN = "mail.notifyhub.example"
    browser.force_login(free.account.user)

    text = page_text(browser.get("/dashboard/"))

    assert "emails go out from noreply@mail.notifyhub.example." in text
    assert "Free" in text
