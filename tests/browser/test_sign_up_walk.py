"""A new holder's walk through the dashboard in a real browser, and the form errors they can meet on the way."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create, account_set_plan, account_sign_up, email_confirm
from domains.models import DomainStatus, SenderDomain
from tests.browser.walk import (
    Holder,
    add_provider_key,
    confirm_email,
    expect_field_error,
    fill_sign_in,
    fill_sign_up,
    generate_api_key,
    ping,
    request_domain,
    sign_in,
    sign_out,
    sign_up,
    verify_domain,
)
from tests.fakes.providers import FakeSendGrid
from tests.providers_fixtures import SENDGRID_KEY

pytestmark = pytest.mark.browser

PASSWORD = "plum-orchard-lantern-42"


@pytest.fixture
def holder() -> Holder:
    return Holder(email="grace@example.com", password=PASSWORD)


def test_sign_up_confirm_sign_in_and_call_the_api_with_the_new_key(
    page: Page, live_server: Any, holder: Holder
) -> None:
    sign_up(page, holder)
    confirm_email(page, holder)
    sign_out(page)
    sign_in(page, holder)

    api_key = generate_api_key(page, holder)

    response = ping(live_server.url, api_key)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["message"] == "pong"


def test_a_paid_holder_adds_a_provider_then_requests_and_verifies_a_domain(
    page: Page, live_server: Any, holder: Holder, sendgrid: FakeSendGrid
) -> None:
    sign_up(page, holder)
    confirm_email(page, holder)
    # An operator moves the account to a paid plan (manage.py setplan): there is no billing page.
    account_set_plan(account=Account.objects.get(user__email=holder.email), plan=Plan.STARTUP)

    add_provider_key(page, provider_label="SendGrid", api_key=SENDGRID_KEY)
    request_domain(page, "example.com")
    # The records SendGrid gave are on the page, ready to copy into DNS.
    (created,) = [
        call for call in sendgrid.calls if call.method == "POST" and call.path.endswith("/whitelabel/domains")
    ]
    assert created.json["domain"] == "em.example.com"
    expect(page.get_by_role("cell", name="CNAME").first).to_be_visible()
    verify_domain(page)
    expect(page.get_by_text("pending verification").first).to_be_visible()
    sendgrid.mark_verified("em.example.com")
    verify_domain(page)

    expect(page.get_by_text("verified", exact=True).first).to_be_visible()
    assert SenderDomain.objects.get(name="example.com").status == DomainStatus.VERIFIED
    assert [call.headers["Authorization"] for call in sendgrid.calls] == [f"Bearer {SENDGRID_KEY}"] * len(
        sendgrid.calls
    )


def test_sign_up_with_a_confirmed_email_says_so_and_keeps_the_address(page: Page, holder: Holder) -> None:
    email_confirm(account=account_sign_up(email=holder.email, password=PASSWORD))

    fill_sign_up(page, email=holder.email, password=PASSWORD)

    expect_field_error(page, "Email", "An account with this email already exists. Sign in instead.")
    expect(page.get_by_label("Email", exact=True)).to_have_value(holder.email)
    assert mail.outbox == []


def test_sign_up_with_a_too_short_password_says_so_and_keeps_the_address(page: Page, holder: Holder) -> None:
    fill_sign_up(page, email=holder.email, password="Tz9!")

    expect_field_error(page, "Password", "This password is too short. It must contain at least 8 characters.")
    expect(page.get_by_label("Email", exact=True)).to_have_value(holder.email)
    assert mail.outbox == []


def test_sign_in_with_a_wrong_password_says_so_and_keeps_the_address(page: Page, holder: Holder) -> None:
    account_create(email=holder.email, plan=Plan.FREE, password=PASSWORD)

    fill_sign_in(page, email=holder.email, password="not-" + PASSWORD)

    expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    expect(page.get_by_label("Email", exact=True)).to_have_value(holder.email)
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)
