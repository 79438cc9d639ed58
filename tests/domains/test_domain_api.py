"""Sender domains through the API, against the fake providers' domain endpoints."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from accounts.plans import Plan
from accounts.services import provider_key_set
from domains.models import SenderDomain
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid
from tests.providers_fixtures import POSTMARK_ACCOUNT_TOKEN, POSTMARK_KEY, RESEND_KEY, SENDGRID_KEY

DOMAIN = "/api/v1/user/domain"


def with_keys(client: Client, *providers: str, postmark_token: str | None = POSTMARK_ACCOUNT_TOKEN) -> Client:
    keys = {"SENDGRID": SENDGRID_KEY, "RESEND": RESEND_KEY, "POSTMARK": POSTMARK_KEY}
    for provider in providers:
        token = postmark_token if provider == "POSTMARK" else None
        provider_key_set(account=client.account, provider=provider, api_key=keys[provider], account_token=token)
    return client


def request_domain(client: Client, domain: Any = "example.com") -> Any:
    return client.post(f"{DOMAIN}/request", {"domain": domain})


@pytest.fixture
def paid(make_client: Any) -> Client:
    return make_client(Plan.INDIE)


def test_request_registers_em_subdomain_with_every_provider(
    paid: Client, sendgrid: FakeSendGrid, resend: FakeResend, postmark: FakePostmark
) -> None:
    with_keys(paid, "SENDGRID", "RESEND", "POSTMARK")

    response = request_domain(paid, "Example.COM")

    assert response.status_code == 201
    data = response.json()["data"]
    assert (data["domain"], data["sendingDomain"], data["status"]) == (
        "example.com",
        "em.example.com",
        "pending_verification",
    )
    assert data["warnings"] == []
    assert {p["provider"] for p in data["providers"]} == {"SENDGRID", "RESEND", "POSTMARK"}
    by_provider: dict[str, list[dict[str, Any]]] = {}
    for record in data["records"]:
        by_provider.setdefault(record["provider"], []).append(record)
    assert {r["type"] for r in by_provider["SENDGRID"]} == {"CNAME"}
    assert {r["type"] for r in by_provider["POSTMARK"]} == {"TXT", "CNAME"}
    assert {(r["type"], r["host"]) for r in by_provider["RESEND"]} == {
        ("MX", "send.em.example.com"),
        ("TXT", "send.em.example.com"),
        ("TXT", "resend._domainkey.em.example.com"),
    }
    assert all(r["host"].endswith(".em.example.com") for r in data["records"])
    assert not any(".em.em." in r["host"] for r in data["records"])
    assert all(r["value"] for r in data["records"])
    assert [call.json for call in sendgrid.calls if call.method == "POST"] == [
        {"domain": "em.example.com", "automatic_security": True}
    ]
    assert [call.json["name"] for call in resend.calls if call.method == "POST"] == ["em.example.com"]
    (postmark_create,) = [call for call in postmark.calls if call.method == "POST"]
    assert postmark_create.json["Name"] == "em.example.com"
    assert postmark_create.headers["X-Postmark-Account-Token"] == POSTMARK_ACCOUNT_TOKEN


def test_postmark_without_its_account_token_is_skipped_with_a_warning(
    paid: Client, sendgrid: FakeSendGrid, postmark: FakePostmark
) -> None:
    with_keys(paid, "SENDGRID", "POSTMARK", postmark_token=None)

    data = request_domain(paid).json()["data"]

    assert [w["provider"] for w in data["warnings"]] == ["POSTMARK"]
    assert "account token" in data["warnings"][0]["reason"]
    assert [p["provider"] for p in data["providers"]] == ["SENDGRID"]
    assert postmark.calls == []


PRE_CREATE = {
    "SENDGRID": (
        "whitelabel/domains",
        {"domain": "em.example.com", "automatic_security": True},
        "Authorization",
        f"Bearer {SENDGRID_KEY}",
    ),
    "RESEND": ("domains", {"name": "em.example.com"}, "Authorization", f"Bearer {RESEND_KEY}"),
    "POSTMARK": (
        "domains",
        {"Name": "em.example.com", "ReturnPathDomain": "pm-bounces.em.example.com"},
        "X-Postmark-Account-Token",
        POSTMARK_ACCOUNT_TOKEN,
    ),
}


@pytest.mark.parametrize("provider", ["SENDGRID", "RESEND", "POSTMARK"])
def test_a_domain_that_already_exists_at_a_provider_is_fetched(
    paid: Client, provider: str, request: pytest.FixtureRequest
) -> None:
    fake = request.getfixturevalue(provider.lower())
    with_keys(paid, provider)
    path, body, header, credential = PRE_CREATE[provider]
    created = requests.post(fake.url + path, json=body, headers={header: credential})
    assert created.status_code in (200, 201)

    response = request_domain(paid)

    assert response.status_code == 201
    data = response.json()["data"]
    assert data["records"]
    assert data["providers"] == [{"provider": provider, "verified": False, "error": None}]
    assert len(fake.domains) == 1


def test_verify_stays_pending_until_every_provider_confirms(
    paid: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(paid, "SENDGRID", "RESEND")
    request_domain(paid)

    sendgrid.mark_verified("em.example.com")
    first = paid.post(f"{DOMAIN}/verify").json()["data"]
    resend.mark_verified("em.example.com")
    second = paid.post(f"{DOMAIN}/verify").json()["data"]

    assert first["status"] == "pending_verification"
    providers = {p["provider"]: p for p in first["providers"]}
    assert providers["SENDGRID"] == {"provider": "SENDGRID", "verified": True, "error": None}
    assert providers["RESEND"]["verified"] is False
    assert providers["RESEND"]["error"]
    assert second["status"] == "verified"
    assert second["verifiedAt"] is not None


def test_a_provider_error_during_verify_keeps_it_pending_and_says_why(paid: Client, sendgrid: FakeSendGrid) -> None:
    with_keys(paid, "SENDGRID")
    request_domain(paid)
    sendgrid.mark_verified("em.example.com")
    sendgrid.fail(500, endpoint="domain_verify")

    data = paid.post(f"{DOMAIN}/verify").json()["data"]

    assert data["status"] == "pending_verification"
    assert data["providers"][0]["error"].startswith("500 ")


def test_a_verified_domain_lets_the_account_send(paid: Client, sendgrid: FakeSendGrid) -> None:
    with_keys(paid, "SENDGRID")
    request_domain(paid)
    assert_error(
        paid.send_email(),
        403,
        "Your sending domain is pending verification. Please complete domain verification in Settings.",
    )

    sendgrid.mark_verified("em.example.com")
    paid.post(f"{DOMAIN}/verify")

    assert paid.send_email().status_code == 202


def test_one_domain_at_a_time(paid: Client, sendgrid: FakeSendGrid) -> None:
    with_keys(paid, "SENDGRID")
    request_domain(paid)

    response = request_domain(paid, "other.com")

    assert_error(response, 409, "Your account already has the sender domain example.com. Delete it first.")


def test_delete_removes_it_at_every_provider(paid: Client, sendgrid: FakeSendGrid, resend: FakeResend) -> None:
    with_keys(paid, "SENDGRID", "RESEND")
    request_domain(paid)

    response = paid.http.delete(DOMAIN, HTTP_X_API_KEY=paid.api_key)

    assert response.status_code == 200
    assert response.json()["data"] == {"deleted": True, "warnings": []}
    assert sendgrid.domains == {}
    assert resend.domains == {}
    assert_error(paid.get(DOMAIN), 404, "No sender domain. Request one first.")
    assert request_domain(paid, "other.com").status_code == 201


def test_a_failed_registration_is_undone_at_the_other_providers(
    paid: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    with_keys(paid, "SENDGRID", "RESEND")
    resend.fail(500, endpoint="domain_create")

    response = request_domain(paid)

    assert response.status_code == 502
    assert response.json()["error"].startswith("Could not register em.example.com with RESEND: 500 ")
    assert sendgrid.domains == {}
    assert not SenderDomain.objects.filter(account=paid.account).exists()


def test_get_shows_the_domain(paid: Client, sendgrid: FakeSendGrid) -> None:
    with_keys(paid, "SENDGRID")
    request_domain(paid)

    data = paid.get(DOMAIN).json()["data"]

    assert (data["domain"], data["status"]) == ("example.com", "pending_verification")
    assert len(data["records"]) == 3


def test_the_free_plan_cannot_add_a_domain(free: Client) -> None:
    assert_error(request_domain(free), 403, "Custom sender domains require a paid plan")


def test_a_domain_needs_a_provider_key_first(paid: Client) -> None:
    assert_error(request_domain(paid), 400, "Add at least one provider API key before adding a sending domain.")


@pytest.mark.parametrize("domain", ["", "localhost", "not a domain", "http://example.com", "-bad.com", 42, None])
def test_a_bad_domain_name_is_400(paid: Client, domain: Any) -> None:
    body = {} if domain is None else {"domain": domain}

    response = paid.post(f"{DOMAIN}/request", body)

    assert_error(response, 400, "domain must be a domain name such as example.com")


def test_the_dashboard_session_works_and_needs_csrf(paid: Client, sendgrid: FakeSendGrid) -> None:
    with_keys(paid, "SENDGRID")
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(paid.account.user)

    refused = browser.post(f"{DOMAIN}/request", {"domain": "example.com"}, format="json")
    assert_error(refused, 403, "CSRF Failed: CSRF cookie not set.")
    assert browser.get(DOMAIN).status_code == 404


def test_user_endpoints_need_a_session_or_a_key(db: None) -> None:
    assert_error(APIClient().get(DOMAIN), 401, "Sign in or send an API key")


def test_the_user_job_endpoint_shows_a_job_with_its_logs(paid: Client) -> None:
    job_id = paid.send_webhook().json()["data"]["jobId"]
    browser = APIClient()
    browser.force_login(paid.account.user)

    data = browser.get(f"/api/v1/user/jobs/{job_id}").json()["data"]

    assert (data["id"], data["deliveryLogs"]) == (job_id, [])
    assert_error(browser.get("/api/v1/user/jobs/00000000-0000-0000-0000-000000000000"), 404, "Job not found")
