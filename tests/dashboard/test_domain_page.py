"""The domain page: request a sending domain, read its DNS records, verify it, delete it."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client as Browser

from accounts.models import Account
from accounts.plans import Plan
from domains.models import DomainRegistration, DomainStatus, SenderDomain
from tests.conftest import Client, ready_to_send
from tests.dashboard.pages import page_text
from tests.domains.test_domain_api import with_keys
from tests.fakes.providers import FakePostmark, FakeProvider, FakeResend, FakeSendGrid

PAGE = "/dashboard/domain/"

# One row of a provider's DNS records table: type (and MX priority), host and value.
RECORD_ROW = re.compile(
    r'<tr>\s*<td>(?P<type>\w+)(?:<br><span class="muted">priority (?P<priority>\d+)</span>)?</td>'
    r'.*?id="dns-(?P<provider>\w+)-\d+-host">(?P<host>[^<]*)</code>'
    r'.*?id="dns-\w+-\d+-value">(?P<value>[^<]*)</code>',
    re.S,
)


def dns_table(response: Any) -> list[dict[str, Any]]:
    """The DNS records the page shows, in the shape the services store them."""
    records = []
    for row in RECORD_ROW.finditer(response.content.decode()):
        record = {
            "provider": row["provider"].upper(),
            "type": row["type"],
            "host": html.unescape(row["host"]),
            "value": html.unescape(row["value"]),
        }
        records.append(record if row["priority"] is None else {**record, "priority": int(row["priority"])})
    return records


def signed_in(account: Account) -> Browser:
    browser = Browser()
    browser.force_login(account.user)
    return browser


def request_domain(browser: Browser, domain: str = "example.com") -> Any:
    return browser.post(PAGE, {"action": "request", "domain": domain})


def verify(browser: Browser) -> Any:
    return browser.post(PAGE, {"action": "verify"}, follow=True)


def delete(browser: Browser, **confirmation: str) -> Any:
    return browser.post(PAGE, {"action": "delete", **confirmation}, follow=True)


def domain_calls(fake: FakeProvider, method: str) -> list[str]:
    return [call.path for call in fake.calls if call.method == method]


@pytest.fixture
def holder(startup: Client) -> Browser:
    return signed_in(startup.account)


# --- requesting a domain -----------------------------------------------------------------------


def test_a_paid_holder_with_a_provider_sees_the_request_form_and_what_happens(startup: Client, holder: Browser) -> None:
    with_keys(startup, "SENDGRID", "RESEND")

    response = holder.get(PAGE)

    assert response.status_code == 200
    text = page_text(response)
    assert "registers em.<your domain> with every provider you configured (SendGrid, Resend)" in text
    assert "shows you the DNS records each one needs" in text
    assert 'name="domain"' in response.content.decode()


def test_requesting_shows_each_providers_dns_records_and_stores_them(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(startup, "SENDGRID", "RESEND")

    response = request_domain(holder, "Example.COM")

    assert (response.status_code, response["Location"]) == (302, PAGE)
    domain = SenderDomain.objects.get(account=startup.account)
    assert (domain.name, domain.status) == ("example.com", DomainStatus.PENDING)
    stored = {registration.provider: registration.records for registration in domain.registrations.all()}
    assert set(stored) == {"SENDGRID", "RESEND"}
    assert domain_calls(sendgrid, "POST") == ["/v3/whitelabel/domains"]
    assert [call.json["name"] for call in resend.calls if call.method == "POST"] == ["em.example.com"]

    page = holder.get(PAGE)
    shown = dns_table(page)
    assert shown == stored["SENDGRID"] + stored["RESEND"]
    (sendgrid_domain,) = sendgrid.domains.values()
    assert {(r["type"], r["host"], r["value"]) for r in shown if r["provider"] == "SENDGRID"} == {
        (record["type"].upper(), record["host"], record["data"]) for record in sendgrid_domain["dns"].values()
    }
    assert [record.get("priority") for record in shown if record["type"] == "MX"] == [10]
    text = page_text(page)
    assert "em.example.com is registered. Add the DNS records below, then verify it." in text
    assert "example.com pending verification" in text
    assert text.count("not verified") == 2


def test_every_host_and_value_has_a_copy_button(startup: Client, holder: Browser, sendgrid: FakeSendGrid) -> None:
    with_keys(startup, "SENDGRID")
    request_domain(holder)

    body = holder.get(PAGE).content.decode()

    code_ids = re.findall(r'<code class="secret" id="(dns-[^"]+)">', body)
    copied = re.findall(r'<button type="button" class="secondary copy" data-copy="(dns-[^"]+)" hidden>', body)
    assert len(code_ids) == 6  # three SendGrid records, a host and a value each
    assert copied == code_ids
    assert len(set(code_ids)) == len(code_ids)


def test_a_provider_skipped_for_a_missing_credential_is_named_with_its_reason(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, postmark: FakePostmark
) -> None:
    with_keys(startup, "SENDGRID", "POSTMARK", postmark_token=None)

    text = page_text(holder.post(PAGE, {"action": "request", "domain": "example.com"}, follow=True))

    assert "Postmark: No account token configured; Postmark needs it for domain operations; skipped" in text
    assert postmark.calls == []
    assert list(DomainRegistration.objects.values_list("provider", flat=True)) == ["SENDGRID"]


@pytest.mark.parametrize("name", ["not a domain", "http://example.com/x", "localhost", "-bad.com"])
def test_an_invalid_name_is_refused_in_words_with_the_input_kept(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, name: str
) -> None:
    with_keys(startup, "SENDGRID")

    response = request_domain(holder, name)

    assert response.status_code == 400
    assert "Enter a domain name such as example.com" in page_text(response)
    assert f'value="{html.escape(name)}"' in response.content.decode()
    assert not SenderDomain.objects.exists()
    assert sendgrid.calls == []


def test_an_empty_name_asks_for_one(startup: Client, holder: Browser) -> None:
    with_keys(startup, "SENDGRID")

    response = request_domain(holder, "  ")

    assert response.status_code == 400
    assert "Enter your domain, such as example.com." in page_text(response)


def test_a_provider_failure_while_requesting_is_shown_in_words_and_nothing_is_kept(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(startup, "SENDGRID", "RESEND")
    resend.fail(500, endpoint="domain_create")

    response = request_domain(holder)

    assert response.status_code == 400
    assert "Could not register em.example.com with RESEND: 500 " in page_text(response)
    assert 'value="example.com"' in response.content.decode()
    assert not SenderDomain.objects.exists()
    assert sendgrid.domains == {}  # the registration already made is undone
    assert len(domain_calls(sendgrid, "DELETE")) == 1


def test_a_second_domain_is_refused_with_the_services_words(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup, "SENDGRID")
    request_domain(holder)

    response = request_domain(holder, "other.com")

    assert response.status_code == 400
    assert "Your account already has the sender domain example.com. Delete it first." in page_text(response)
    assert list(SenderDomain.objects.values_list("name", flat=True)) == ["example.com"]


# --- verifying ---------------------------------------------------------------------------------


def test_verify_before_the_records_exist_stays_pending_with_each_providers_reasons(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(startup, "SENDGRID", "RESEND")
    request_domain(holder)

    response = verify(holder)

    assert response.status_code == 200
    text = page_text(response)
    assert "Not verified yet: each provider's answer is below." in text
    assert "example.com pending verification" in text
    sendgrid_reason = 'mail_cname: Expected CNAME for "em1001.em.example.com" to match "u123.wl.sendgrid.net".'
    assert f"SendGrid says: {sendgrid_reason}" in text
    assert "Resend says: SPF MX record pending; SPF TXT record pending; DKIM TXT record pending" in text
    assert SenderDomain.objects.get().status == DomainStatus.PENDING
    assert len(domain_calls(sendgrid, "POST")) == 2  # the registration, then the validation


def test_verify_once_every_provider_confirms_shows_the_domain_verified(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(startup, "SENDGRID", "RESEND")
    request_domain(holder)
    sendgrid.mark_verified("em.example.com")
    resend.mark_verified("em.example.com")

    response = verify(holder)

    text = page_text(response)
    assert "example.com is verified: your emails go out from em.example.com." in text
    assert "example.com verified" in text
    assert "SendGrid verified" in text
    assert "Resend verified" in text
    assert "says:" not in text
    assert '<span class="badge ok">verified</span>' in response.content.decode()
    domain = SenderDomain.objects.get()
    assert (domain.status, domain.verified_at is not None) == (DomainStatus.VERIFIED, True)


def test_one_provider_confirming_is_not_enough(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(startup, "SENDGRID", "RESEND")
    request_domain(holder)
    sendgrid.mark_verified("em.example.com")

    text = page_text(verify(holder))

    assert "SendGrid verified" in text
    assert "Resend not verified" in text
    assert "example.com pending verification" in text


def test_a_provider_failure_while_verifying_is_shown_in_words(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup, "SENDGRID")
    request_domain(holder)
    sendgrid.mark_verified("em.example.com")
    sendgrid.fail(500, endpoint="domain_verify")

    response = verify(holder)

    assert response.status_code == 200
    assert "SendGrid says: 500 internal server error" in page_text(response)
    assert SenderDomain.objects.get().status == DomainStatus.PENDING


# --- deleting ----------------------------------------------------------------------------------


def test_delete_without_the_confirmation_keeps_the_domain(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup, "SENDGRID")
    request_domain(holder)

    response = delete(holder)

    assert response.status_code == 400
    assert "Tick the box to confirm: your emails stop until a new domain is verified." in page_text(response)
    assert SenderDomain.objects.exists()
    assert domain_calls(sendgrid, "DELETE") == []


def test_delete_with_the_confirmation_removes_it_here_and_at_every_provider(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(startup, "SENDGRID", "RESEND")
    request_domain(holder)
    sendgrid_id, resend_id = DomainRegistration.objects.values_list("provider_domain_id", flat=True)

    response = delete(holder, confirm="on")

    assert response.status_code == 200
    deleted = "Your sending domain is deleted. Emails on your plan are refused until a new one is verified."
    assert deleted in page_text(response)
    assert 'name="domain"' in response.content.decode()  # the request form is back
    assert not SenderDomain.objects.exists()
    assert not DomainRegistration.objects.exists()
    assert domain_calls(sendgrid, "DELETE") == [f"/v3/whitelabel/domains/{sendgrid_id}"]
    assert domain_calls(resend, "DELETE") == [f"/domains/{resend_id}"]
    assert sendgrid.domains == {}
    assert resend.domains == {}


def test_a_provider_refusing_the_delete_is_reported_as_a_warning(
    startup: Client, holder: Browser, sendgrid: FakeSendGrid
) -> None:
    with_keys(startup, "SENDGRID")
    request_domain(holder)
    sendgrid.fail(500, endpoint="domain_delete")

    response = delete(holder, confirm="on")

    assert response.status_code == 200
    warning = "SendGrid could not remove it (500 internal server error); remove it in SendGrid yourself."
    assert warning in page_text(response)
    assert not SenderDomain.objects.exists()


# --- who may have a domain ---------------------------------------------------------------------


def test_the_free_plan_sees_why_it_has_no_domain_and_no_form(free: Client) -> None:
    response = signed_in(free.account).get(PAGE)

    assert response.status_code == 200
    text = page_text(response)
    assert "Sending domains are for paid plans" in text
    assert "On the Free plan every email goes out from noreply@notifyhub.local" in text
    assert "Paid plans (Indie and Startup) send from your own domain" in text
    assert 'name="domain"' not in response.content.decode()


def test_a_request_from_the_free_plan_is_refused_with_the_services_words(free: Client, sendgrid: FakeSendGrid) -> None:
    with_keys(free, "SENDGRID")

    response = request_domain(signed_in(free.account))

    assert response.status_code == 400
    assert "Custom sender domains require a paid plan" in page_text(response)
    assert not SenderDomain.objects.exists()
    assert sendgrid.calls == []


def test_a_paid_holder_without_a_provider_key_is_sent_to_the_providers_page(startup: Client, holder: Browser) -> None:
    response = holder.get(PAGE)

    text = page_text(response)
    assert "Add an email provider first" in text
    assert "it needs at least one provider key (SendGrid, Resend or Postmark)" in text
    assert '<a class="button" href="/dashboard/providers/">Add a provider key</a>' in response.content.decode()
    assert 'name="domain"' not in response.content.decode()


def test_a_request_without_a_provider_key_is_refused_with_the_services_words(holder: Browser) -> None:
    response = request_domain(holder)

    assert response.status_code == 400
    assert "Add at least one provider API key before adding a sending domain." in page_text(response)
    assert not SenderDomain.objects.exists()


def test_another_accounts_domain_is_never_shown_verified_or_deleted(
    startup: Client, holder: Browser, make_client: Any
) -> None:
    other = ready_to_send(make_client(Plan.INDIE), "SENDGRID", domain="other-company.com")
    with_keys(startup, "SENDGRID")

    page = holder.get(PAGE)
    verified = verify(holder)
    deleted = delete(holder, confirm="on")

    assert "other-company.com" not in page.content.decode()
    assert 'name="domain"' in page.content.decode()
    assert "No sender domain. Request one first." in page_text(verified)
    assert "No sender domain. Request one first." in page_text(deleted)
    assert SenderDomain.objects.get(account=other.account).status == DomainStatus.VERIFIED
    assert DomainRegistration.objects.filter(domain__account=other.account).count() == 1


def test_the_page_needs_a_signed_in_holder(db: None) -> None:
    response = Browser().get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
