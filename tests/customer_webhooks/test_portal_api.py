"""Consumer portal links over the API: `POST /api/v1/apps/<app>/portal` (docs/customer-webhooks.md, "Consumer
portal")."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core import signing
from django.test import override_settings
from django.utils import timezone

from accounts.models import AuditEntry, KeyMode, KeyScope
from customer_webhooks.models import App
from customer_webhooks.portal import LINK_SALT, SESSION_SALT, PortalGrant, portal_grant_read
from tests.api.test_envelope import assert_error
from tests.conftest import Client
from tests.customer_webhooks.conftest import APPS, keyed
from tests.factories import AppFactory

pytestmark = pytest.mark.django_db

TEST_KEY_REFUSED = "Test keys cannot read or change live data; use a live key"


def portal(client: Client, app: str, body: object = None) -> object:
    return client.post(f"{APPS}/{app}/portal", body)


def token_of(url: str) -> str:
    path = urlsplit(url).path
    assert path.startswith("/portal/"), url
    assert path.endswith("/"), url
    return path.removeprefix("/portal/").removesuffix("/")


@override_settings(PUBLIC_URL="https://notify.example")
def test_a_link_answers_201_with_its_url_and_expiry_an_hour_on_and_is_audited(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")
    before = timezone.now().replace(microsecond=0)

    response = portal(startup, "acme", {})

    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert set(data) == {"url", "expiresAt"}
    assert data["url"].startswith("https://notify.example/portal/")
    expires_at = datetime.fromisoformat(data["expiresAt"])
    assert before + timedelta(hours=1) <= expires_at <= timezone.now() + timedelta(hours=1)
    grant = portal_grant_read(token_of(data["url"]))
    assert grant is not None
    assert (grant.app_id, grant.account_id, grant.expires_at) == (app.id, startup.account.id, expires_at)
    assert before <= grant.issued_at <= timezone.now()
    entry = AuditEntry.objects.get(account=startup.account, action="portal_link.created")
    assert (entry.target, entry.actor) == ("acme", "holder")
    assert "portal/" not in entry.target


def test_a_link_by_the_apps_id_and_without_a_body(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid=None)

    response = portal(startup, str(app.id))

    assert response.status_code == 201, response.json()
    assert AuditEntry.objects.get(action="portal_link.created").target == str(app.id)


@override_settings(PORTAL_LINK_SECONDS=120)
def test_the_links_life_is_portal_link_seconds(startup: Client) -> None:
    AppFactory(account=startup.account, uid="acme")

    data = portal(startup, "acme").json()["data"]

    expires_at = datetime.fromisoformat(data["expiresAt"])
    assert timedelta(seconds=118) < expires_at - timezone.now() <= timedelta(seconds=120)


def test_a_link_read_after_its_expiry_is_expired_and_a_forged_one_is_none(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")
    past = timezone.now().replace(microsecond=0) - timedelta(seconds=1)
    expired = PortalGrant(app_id=app.id, account_id=startup.account.id, issued_at=past, expires_at=past)
    token = token_of(portal(startup, "acme").json()["data"]["url"])
    other = AppFactory(account=startup.account, uid="globex")
    payload, signature = token.split(".")

    read = portal_grant_read(expired.sign(LINK_SALT))
    assert read is not None
    assert read.expired
    valid = portal_grant_read(token)
    assert valid is not None
    assert not valid.expired
    # Another app named in the payload, the signature altered, a session's value used as a link, or made up.
    forged_payload = replace(valid, app_id=other.id)
    assert portal_grant_read(forged_payload.sign(LINK_SALT).split(".")[0] + "." + signature) is None
    assert portal_grant_read(payload + "." + signature[:-2] + "AA") is None
    assert portal_grant_read(valid.sign(SESSION_SALT)) is None
    assert portal_grant_read("x" * 40) is None
    assert portal_grant_read("a" * 400) is None


def test_another_accounts_app_or_none_is_404_and_records_nothing(startup: Client, free: Client) -> None:
    AppFactory(account=free.account, uid="acme")

    assert_error(portal(startup, "acme"), 404, "App acme not found", "app_not_found")
    assert_error(portal(startup, "nobody"), 404, "App nobody not found", "app_not_found")
    assert not AuditEntry.objects.filter(action="portal_link.created").exists()


def test_a_field_in_the_body_is_refused_as_unknown(startup: Client) -> None:
    AppFactory(account=startup.account, uid="acme")

    assert_error(portal(startup, "acme", {"expiresIn": 60}), 400, "Unknown field: expiresIn", "unknown_field")
    assert not AuditEntry.objects.filter(action="portal_link.created").exists()


@pytest.mark.parametrize("scope", [KeyScope.READ, KeyScope.SEND])
def test_only_a_full_key_makes_a_link(startup: Client, scope: str) -> None:
    AppFactory(account=startup.account, uid="acme")

    refused = portal(keyed(startup, scope=scope), "acme")

    assert_error(refused, 403, "This API key's scope does not allow this request", "api_key_scope_refused")


def test_a_test_key_makes_no_link(startup: Client) -> None:
    AppFactory(account=startup.account, uid="acme")

    assert_error(portal(keyed(startup, mode=KeyMode.TEST), "acme"), 403, TEST_KEY_REFUSED, "test_key_refused")
    assert not AuditEntry.objects.filter(action="portal_link.created").exists()


def test_the_request_log_line_names_the_path_without_a_token(startup: Client, caplog: pytest.LogCaptureFixture) -> None:
    AppFactory(account=startup.account, uid="acme")
    with caplog.at_level(logging.INFO, logger="notifyhub.request"):
        url = portal(startup, "acme").json()["data"]["url"]

    assert token_of(url) not in caplog.text
    assert "/api/v1/apps/acme/portal" in caplog.text


def test_a_token_without_its_issue_time_is_none(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")
    expiry = int((timezone.now() + timedelta(hours=1)).timestamp())
    # The shape before links held the time they were made: never released, so never honoured.
    old = signing.Signer(salt=LINK_SALT, sep=".").sign_object([app.id.hex, startup.account.id, expiry])

    assert portal_grant_read(old) is None


# --- Revoking -------------------------------------------------------------------------------------------------------


def revoke(client: Client, app: str, body: object = None) -> Any:
    return client.post(f"{APPS}/{app}/portal/revoke", body)


def test_a_revoke_answers_200_with_its_time_ends_earlier_links_not_later_ones_and_is_audited(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")
    earlier = portal_grant_read(token_of(portal(startup, "acme").json()["data"]["url"]))

    response = revoke(startup, "acme", {})

    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    assert set(data) == {"revokedAt"}
    app.refresh_from_db()
    assert app.portal_revoked_at is not None
    assert abs(datetime.fromisoformat(data["revokedAt"]) - app.portal_revoked_at) < timedelta(milliseconds=1)
    later = portal_grant_read(token_of(portal(startup, "acme").json()["data"]["url"]))
    assert earlier is not None
    assert later is not None
    assert earlier.revoked(app)
    assert not later.revoked(app)
    entry = AuditEntry.objects.get(account=startup.account, action="portal_links.revoked")
    assert (entry.target, entry.actor) == ("acme", "holder")


def test_a_revoke_by_the_apps_id_without_a_body_and_twice(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid=None)

    assert revoke(startup, str(app.id)).status_code == 200
    first = App.objects.get(id=app.id).portal_revoked_at
    assert revoke(startup, str(app.id)).status_code == 200

    second = App.objects.get(id=app.id).portal_revoked_at
    assert first is not None
    assert second is not None
    assert second > first
    assert list(AuditEntry.objects.filter(action="portal_links.revoked").values_list("target", flat=True)) == [
        str(app.id),
        str(app.id),
    ]


def test_a_revoke_of_another_accounts_app_or_none_is_404_and_changes_nothing(startup: Client, free: Client) -> None:
    other = AppFactory(account=free.account, uid="acme")

    assert_error(revoke(startup, "acme"), 404, "App acme not found", "app_not_found")
    assert_error(revoke(startup, "nobody"), 404, "App nobody not found", "app_not_found")
    assert App.objects.get(id=other.id).portal_revoked_at is None
    assert not AuditEntry.objects.filter(action="portal_links.revoked").exists()


def test_a_field_in_a_revokes_body_is_refused_as_unknown(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")

    assert_error(revoke(startup, "acme", {"before": "now"}), 400, "Unknown field: before", "unknown_field")
    assert App.objects.get(id=app.id).portal_revoked_at is None


@pytest.mark.parametrize("scope", [KeyScope.READ, KeyScope.SEND])
def test_only_a_full_key_revokes(startup: Client, scope: str) -> None:
    AppFactory(account=startup.account, uid="acme")

    refused = revoke(keyed(startup, scope=scope), "acme")

    assert_error(refused, 403, "This API key's scope does not allow this request", "api_key_scope_refused")


def test_a_test_key_revokes_nothing(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")

    assert_error(revoke(keyed(startup, mode=KeyMode.TEST), "acme"), 403, TEST_KEY_REFUSED, "test_key_refused")
    assert App.objects.get(id=app.id).portal_revoked_at is None
    assert not AuditEntry.objects.filter(action="portal_links.revoked").exists()
