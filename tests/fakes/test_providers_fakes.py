"""The provider fakes speak the real APIs: anymail sends through them, and their domain APIs round-trip."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from anymail.exceptions import AnymailRequestsAPIError
from django.core.mail import EmailMessage, get_connection

from tests.fakes.providers import FakePostmark, FakeProvider, FakeResend, FakeSendGrid

KEY = "test-key"
ACCOUNT_TOKEN = "test-account-token"
SENDGRID_REFUSED = "The provided authorization grant is invalid, expired, or revoked"
BACKENDS = {
    "SENDGRID": ("anymail.backends.sendgrid.EmailBackend", "api_key"),
    "RESEND": ("anymail.backends.resend.EmailBackend", "api_key"),
    "POSTMARK": ("anymail.backends.postmark.EmailBackend", "server_token"),
}


@pytest.fixture(params=[FakeSendGrid, FakeResend, FakePostmark], ids=["sendgrid", "resend", "postmark"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeProvider]:
    with request.param() as provider:
        provider.accept_key(KEY)
        if isinstance(provider, FakePostmark):
            provider.accept_account_token(ACCOUNT_TOKEN)
        yield provider


def send(fake: FakeProvider, *, key: str = KEY, timeout: float = 5) -> EmailMessage:
    backend, credential = BACKENDS[fake.name]
    connection = get_connection(backend, api_url=fake.url, timeout=timeout, **{credential: key})
    message = EmailMessage("Welcome", "Hello there", "NotifyHub <jobs@em.example.com>", ["user@example.com"])
    message.connection = connection
    message.metadata = {"job_id": "abc"}  # type: ignore[attr-defined]
    message.send()
    return message


# --- sending through django-anymail -----------------------------------------------------
def test_sendgrid_receives_a_v3_mail_send() -> None:
    with FakeSendGrid() as sendgrid:
        sendgrid.accept_key(KEY)
        message = send(sendgrid)

    [call] = sendgrid.sent
    assert (call.method, call.path) == ("POST", "/v3/mail/send")
    assert call.headers["authorization"] == f"Bearer {KEY}"
    personalization = call.json["personalizations"][0]
    assert personalization["to"] == [{"email": "user@example.com"}]
    assert call.json["from"] == {"email": "jobs@em.example.com", "name": "NotifyHub"}
    assert call.json["subject"] == "Welcome"
    assert call.json["custom_args"] == {"job_id": "abc"}  # metadata
    # SendGrid's 202 carries no id in the body; anymail uses the one it generated.
    assert message.anymail_status.message_id == personalization["custom_args"]["anymail_id"]  # type: ignore[attr-defined]


def test_resend_receives_an_email_with_metadata_in_a_header() -> None:
    with FakeResend() as resend:
        resend.accept_key(KEY)
        message = send(resend)

    [call] = resend.sent
    assert (call.method, call.path) == ("POST", "/emails")
    assert call.headers["Authorization"] == f"Bearer {KEY}"
    assert call.json["to"] == ["user@example.com"]
    assert call.json["from"] == "NotifyHub <jobs@em.example.com>"
    assert call.json["subject"] == "Welcome"
    # anymail sends metadata as a JSON X-Metadata header, not as Resend tags.
    assert json.loads(call.json["headers"]["X-Metadata"]) == {"job_id": "abc"}
    assert "tags" not in call.json
    uuid.UUID(message.anymail_status.message_id)  # type: ignore[attr-defined]


def test_postmark_receives_an_email_with_metadata() -> None:
    with FakePostmark() as postmark:
        postmark.accept_key(KEY)
        message = send(postmark)

    [call] = postmark.sent
    assert (call.method, call.path) == ("POST", "/email")
    assert call.headers["X-Postmark-Server-Token"] == KEY
    assert call.json["To"] == "user@example.com"
    assert call.json["From"] == "NotifyHub <jobs@em.example.com>"
    assert call.json["Subject"] == "Welcome"
    assert call.json["Metadata"] == {"job_id": "abc"}
    uuid.UUID(message.anymail_status.message_id)  # type: ignore[attr-defined]


# Wrong credentials: SendGrid 401, Resend 403 (invalid_api_key), Postmark 401 (ErrorCode 10).
@pytest.mark.parametrize(("provider", "status"), [(FakeSendGrid, 401), (FakeResend, 403), (FakePostmark, 401)])
def test_it_refuses_an_unknown_key_like_the_provider(provider: type[FakeProvider], status: int) -> None:
    with provider() as fake:
        fake.accept_key(KEY)
        with pytest.raises(AnymailRequestsAPIError) as refused:
            send(fake, key="wrong")

    assert refused.value.status_code == status
    assert fake.sent == []
    assert len(fake.calls) == 1


@pytest.mark.parametrize("status", [429, 500])
def test_it_fails_the_next_send_on_request(fake: FakeProvider, status: int) -> None:
    fake.fail(status)
    with pytest.raises(AnymailRequestsAPIError) as failed:
        send(fake)
    send(fake)  # only the next one

    assert failed.value.status_code == status
    assert len(fake.calls) == 2
    assert len(fake.sent) == 1


def test_it_hangs_past_the_client_timeout(fake: FakeProvider) -> None:
    fake.hang(5)
    with pytest.raises(AnymailRequestsAPIError) as failed:
        send(fake, timeout=0.3)

    assert failed.value.status_code is None  # a network error, not an HTTP answer


def test_unknown_paths_and_methods_answer_in_the_providers_format(fake: FakeProvider) -> None:
    missing = requests.get(fake.url + "no/such/thing", timeout=5)
    wrong_method = requests.put(fake.url + {"SENDGRID": "mail/send"}.get(fake.name, "domains"), timeout=5)

    assert (missing.status_code, wrong_method.status_code) == (404, 405)
    expected_keys = {"SENDGRID": {"errors"}, "RESEND": {"statusCode", "message", "name"}, "POSTMARK": {"Message"}}
    assert set(missing.json()) == expected_keys[fake.name]


# --- domain APIs over plain requests ----------------------------------------------------
def api(fake: FakeProvider, method: str, path: str, **kwargs: Any) -> requests.Response:
    if isinstance(fake, FakePostmark):
        headers = {"X-Postmark-Account-Token": ACCOUNT_TOKEN, "Accept": "application/json"}
    else:
        headers = {"Authorization": f"Bearer {KEY}"}
    return requests.request(method, fake.url + path, headers=headers, timeout=5, **kwargs)


@pytest.mark.parametrize(
    "body", [{"domain": "em.example.com"}, {"domain": "example.com", "subdomain": "em"}], ids=["full", "subdomain"]
)
def test_sendgrid_domain_round_trip(body: dict[str, str]) -> None:
    with FakeSendGrid() as sendgrid:
        sendgrid.accept_key(KEY)
        created = api(sendgrid, "POST", "whitelabel/domains", json={**body, "automatic_security": True})
        domain_id = created.json()["id"]
        duplicate = api(sendgrid, "POST", "whitelabel/domains", json={**body, "automatic_security": True})
        found = api(sendgrid, "GET", "whitelabel/domains", params={"domain": "em.example.com"}).json()
        before = api(sendgrid, "POST", f"whitelabel/domains/{domain_id}/validate").json()
        sendgrid.mark_verified("em.example.com")
        after = api(sendgrid, "POST", f"whitelabel/domains/{domain_id}/validate").json()
        read = api(sendgrid, "GET", f"whitelabel/domains/{domain_id}").json()
        deleted = api(sendgrid, "DELETE", f"whitelabel/domains/{domain_id}")
        gone = api(sendgrid, "GET", f"whitelabel/domains/{domain_id}")

    assert created.status_code == 201
    dns = created.json()["dns"]
    assert dns["mail_cname"]["data"] == "u123.wl.sendgrid.net"
    assert dns["dkim1"] == {
        "valid": False,
        "type": "cname",
        "host": f"s1._domainkey.{body['domain']}",
        "data": "s1.domainkey.u123.wl.sendgrid.net",
    }
    assert duplicate.status_code == 400
    assert "errors" in duplicate.json()
    assert [domain["id"] for domain in found] == [domain_id]
    assert before["valid"] is False
    assert before["validation_results"]["dkim1"]["reason"].startswith("Expected CNAME for")
    assert after == {
        "id": domain_id,
        "valid": True,
        "validation_results": {key: {"valid": True, "reason": None} for key in ("mail_cname", "dkim1", "dkim2")},
    }
    assert read["valid"] is True
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert gone.status_code == 404


def test_resend_domain_round_trip() -> None:
    with FakeResend() as resend:
        resend.accept_key(KEY)
        created = api(resend, "POST", "domains", json={"name": "em.example.com"})
        domain_id = created.json()["id"]
        duplicate = api(resend, "POST", "domains", json={"name": "em.example.com"})
        listed = api(resend, "GET", "domains").json()
        verify = api(resend, "POST", f"domains/{domain_id}/verify").json()
        pending = api(resend, "GET", f"domains/{domain_id}").json()
        resend.mark_verified("em.example.com")
        api(resend, "POST", f"domains/{domain_id}/verify")
        verified = api(resend, "GET", f"domains/{domain_id}").json()
        deleted = api(resend, "DELETE", f"domains/{domain_id}").json()
        gone = api(resend, "GET", f"domains/{domain_id}")

    assert created.status_code == 201
    assert created.json()["status"] == "not_started"
    names = [(record["record"], record["type"], record["name"]) for record in created.json()["records"]]
    assert names == [("SPF", "MX", "send.em"), ("SPF", "TXT", "send.em"), ("DKIM", "TXT", "resend._domainkey.em")]
    assert duplicate.status_code == 403
    assert duplicate.json()["name"] == "validation_error"
    assert [domain["name"] for domain in listed["data"]] == ["em.example.com"]
    assert listed["object"] == "list"
    assert verify == {"object": "domain", "id": domain_id}
    assert pending["status"] == "pending"
    assert verified["status"] == "verified"
    assert {record["status"] for record in verified["records"]} == {"verified"}
    assert deleted == {"object": "domain", "id": domain_id, "deleted": True}
    assert gone.json() == {"statusCode": 404, "message": "Domain not found", "name": "not_found"}


def test_resend_lists_a_receiving_record_when_receiving_is_on() -> None:
    with FakeResend(receiving=True) as resend:
        resend.accept_key(KEY)
        records = api(resend, "POST", "domains", json={"name": "em.example.com"}).json()["records"]

    assert records[-1] | {"value": "?"} == {
        "record": "Receiving",
        "name": "em",
        "type": "MX",
        "ttl": "Auto",
        "status": "not_started",
        "value": "?",
        "priority": 10,
    }


def test_postmark_domain_round_trip() -> None:
    with FakePostmark() as postmark:
        postmark.accept_key(KEY)
        postmark.accept_account_token(ACCOUNT_TOKEN)
        body = {"Name": "em.example.com", "ReturnPathDomain": "pm-bounces.em.example.com"}
        with_server_token = requests.post(
            postmark.url + "domains", json=body, headers={"X-Postmark-Server-Token": KEY}, timeout=5
        )
        created = api(postmark, "POST", "domains", json=body).json()
        domain_id = created["ID"]
        duplicate = api(postmark, "POST", "domains", json=body)
        listed = api(postmark, "GET", "domains", params={"count": 500, "offset": 0}).json()
        not_yet = api(postmark, "PUT", f"domains/{domain_id}/verifyDkim").json()
        postmark.mark_verified("em.example.com")
        dkim = api(postmark, "PUT", f"domains/{domain_id}/verifyDkim").json()
        return_path = api(postmark, "PUT", f"domains/{domain_id}/verifyReturnPath").json()
        read = api(postmark, "GET", f"domains/{domain_id}").json()
        deleted = api(postmark, "DELETE", f"domains/{domain_id}").json()
        gone = api(postmark, "GET", f"domains/{domain_id}")

    assert with_server_token.status_code == 401
    assert with_server_token.json()["ErrorCode"] == 10
    assert created["DKIMPendingHost"].endswith("pm._domainkey.em.example.com")
    assert created["ReturnPathDomainCNAMEValue"] == "pm.mtasv.net"
    assert (duplicate.status_code, duplicate.json()["ErrorCode"]) == (422, 512)
    assert listed["TotalCount"] == 1
    assert listed["Domains"][0]["ID"] == domain_id
    assert not_yet["DKIMVerified"] is False
    assert dkim["DKIMVerified"] is True
    assert (dkim["DKIMHost"], dkim["DKIMTextValue"]) == (created["DKIMPendingHost"], created["DKIMPendingTextValue"])
    assert (dkim["DKIMPendingHost"], dkim["DKIMPendingTextValue"]) == ("", "")
    assert return_path["ReturnPathDomainVerified"] is True
    assert read["DKIMVerified"]
    assert read["ReturnPathDomainVerified"]
    assert deleted == {"ErrorCode": 0, "Message": "Domain em.example.com removed."}
    assert gone.status_code == 404


def test_failures_can_target_a_domain_endpoint(fake: FakeProvider) -> None:
    create = {
        "SENDGRID": ("whitelabel/domains", {"domain": "em.example.com"}),
        "RESEND": ("domains", {"name": "em.example.com"}),
        "POSTMARK": ("domains", {"Name": "em.example.com"}),
    }
    path, body = create[fake.name]
    fake.fail(503, endpoint="domain_create")

    assert api(fake, "POST", path, json=body).status_code == 503
    assert api(fake, "POST", path, json=body).status_code in (200, 201)
    assert len(fake.domains) == 1
    with pytest.raises(ValueError, match="unknown endpoint"):
        fake.fail(500, endpoint="domains")


# --- the key checks NotifyHub makes before saving a key ----------------------------------------
def test_sendgrid_lists_the_scopes_of_an_accepted_key_only() -> None:
    with FakeSendGrid() as sendgrid:
        sendgrid.accept_key(KEY)
        accepted = api(sendgrid, "GET", "scopes")
        unknown = requests.get(sendgrid.url + "scopes", headers={"Authorization": "Bearer wrong"}, timeout=5)
        anonymous = requests.get(sendgrid.url + "scopes", timeout=5)

    assert accepted.status_code == 200
    assert {"mail.send", "whitelabel.create"} <= set(accepted.json()["scopes"])
    assert (unknown.status_code, unknown.json()) == (
        401,
        {"errors": [{"field": None, "message": SENDGRID_REFUSED, "help": None}]},
    )
    assert (anonymous.status_code, anonymous.json()["errors"][0]["message"]) == (401, "authorization required")


def test_resend_takes_a_sending_only_key_for_sending_and_nothing_else() -> None:
    with FakeResend() as resend:
        resend.accept_sending_key(KEY)
        send(resend)
        listed = api(resend, "GET", "domains")
        unknown = requests.get(resend.url + "domains", headers={"Authorization": "Bearer wrong"}, timeout=5)

    assert len(resend.sent) == 1
    assert (listed.status_code, listed.json()) == (
        401,
        {"statusCode": 401, "message": "This API key is restricted to only send emails.", "name": "restricted_api_key"},
    )
    assert (unknown.status_code, unknown.json()["name"]) == (403, "invalid_api_key")


def test_postmark_shows_the_server_of_a_server_token_and_takes_no_other_token() -> None:
    with FakePostmark() as postmark:
        postmark.accept_key(KEY)
        postmark.accept_account_token(ACCOUNT_TOKEN)
        server = requests.get(postmark.url + "server", headers={"X-Postmark-Server-Token": KEY}, timeout=5)
        unknown = requests.get(postmark.url + "server", headers={"X-Postmark-Server-Token": "wrong"}, timeout=5)
        with_account_token = api(postmark, "GET", "server")

    assert server.status_code == 200
    assert server.json()["ApiTokens"] == [KEY]
    assert {"ID", "Name", "DeliveryType", "InboundHash"} <= set(server.json())
    assert unknown.status_code == 401
    assert unknown.json() == {
        "ErrorCode": 10,
        "Message": "The Server Token you provided in the X-Postmark-Server-Token request header was invalid. "
        "Please verify that you are using a valid token.",
    }
    assert (with_account_token.status_code, with_account_token.json()["ErrorCode"]) == (401, 10)
    assert "No Account or Server API tokens were supplied" in with_account_token.json()["Message"]


@pytest.mark.parametrize(("provider", "path"), [(FakeSendGrid, "scopes"), (FakePostmark, "server")])
def test_failures_can_target_the_key_check(provider: type[FakeProvider], path: str) -> None:
    with provider() as fake:
        fake.accept_key(KEY)
        fake.fail(503, endpoint="key_check")
        headers = {"Authorization": f"Bearer {KEY}", "X-Postmark-Server-Token": KEY}
        answers = [requests.get(fake.url + path, headers=headers, timeout=5).status_code for _ in range(2)]

    assert answers == [503, 200]


def test_a_failure_for_an_endpoint_the_provider_lacks_is_refused() -> None:
    with FakeResend() as resend, pytest.raises(ValueError, match="unknown endpoint 'key_check'"):
        resend.fail(503, endpoint="key_check")  # Resend's key check is its domain_list
