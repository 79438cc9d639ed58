"""The account audit log (docs/rules.md, "Audit log"): every change to an account recorded once, with who made it
(the holder, staff, an operator), what it was on and from which address; read newest first through the API, never
another account's, never a secret."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client as DjangoClient
from django.utils import timezone

from accounts.models import Account, AuditEntry
from accounts.plans import Plan
from accounts.services import (
    account_delete,
    api_key_create,
    api_key_revoke,
    provider_key_set,
    signing_secret_generate,
)
from core.actor import OPERATING, Actor, acting_as, current_actor
from core.api.envelope import iso_utc
from event_endpoints.services import endpoint_create
from suppressions.models import Suppression, SuppressionReason
from suppressions.services import Reported, suppression_add, suppressions_record
from tests.accounts.test_api_keys import SCOPE_REFUSED
from tests.accounts.test_commands import run
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client
from tests.dashboard.pages import page_text
from tests.fakes.events import ResendEvents, SendGridEvents
from tests.fakes.providers import FakeResend, FakeSendGrid
from tests.providers_fixtures import RESEND_KEY, SENDGRID_KEY
from tests.staff.conftest import admin_session
from tests.staff.test_admin_console import act
from webhooks_inbound.services import postmark_password_generate

AUDIT = "/api/v1/user/audit"
HOLDER_IP = "203.0.113.7"
STAFF_IP = "198.51.100.4"
STAFF = "staff:ops@notifyhub.local"
PASSWORD = "plum-orchard-lantern-42"

Entry = tuple[str, str, str, str | None]


def log_of(account: Account) -> list[Entry]:
    """The account's audit log, oldest first: (action, actor, target, ip)."""
    entries = AuditEntry.objects.filter(account=account).order_by("created_at", "id")
    return list(entries.values_list("action", "actor", "target", "ip"))


def forget_log(account: Account) -> None:
    """Starts the account's log over, so a test sees only the changes it makes."""
    AuditEntry.objects.filter(account=account).delete()


def by_holder(action: str, target: str = "") -> Entry:
    return (action, "holder", target, HOLDER_IP)


def by_staff(action: str, target: str = "") -> Entry:
    return (action, STAFF, target, STAFF_IP)


def by_operator(action: str, target: str = "") -> Entry:
    return (action, "operator", target, None)


@pytest.fixture
def holder(startup: Client) -> Client:
    """A Startup account's API client calling from HOLDER_IP, its log empty (the first key's entry forgotten)."""
    forget_log(startup.account)
    startup.http.defaults["REMOTE_ADDR"] = HOLDER_IP
    return startup


def dashboard(account: Account) -> DjangoClient:
    """The holder's browser, signed in, at HOLDER_IP."""
    browser = DjangoClient(REMOTE_ADDR=HOLDER_IP)
    browser.force_login(account.user)
    return browser


@pytest.fixture
def staff_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops")


@pytest.fixture
def staff(staff_user: Any) -> DjangoClient:
    """The admin, signed in as a superuser, at STAFF_IP."""
    browser = DjangoClient(REMOTE_ADDR=STAFF_IP)
    browser.force_login(staff_user)
    return browser


# --- the holder ---------------------------------------------------------------------------------


def test_api_keys_made_and_revoked_on_the_dashboard_are_the_holders_from_their_address(holder: Client) -> None:
    browser = dashboard(holder.account)

    created = browser.post("/dashboard/api-key/", {"action": "create", "name": "CI", "scope": "send"})
    revoked = browser.post("/dashboard/api-key/", {"action": "revoke", "name": "CI"})

    assert (created.status_code, revoked.status_code) == (200, 302)
    assert log_of(holder.account) == [by_holder("api_key.created", "CI"), by_holder("api_key.revoked", "CI")]


def test_provider_keys_added_reordered_and_removed_on_the_dashboard_name_the_provider(
    holder: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    browser = dashboard(holder.account)

    added = [
        browser.post("/dashboard/providers/", {"action": "add", "provider": provider, "api_key": key})
        for provider, key in [("SENDGRID", SENDGRID_KEY), ("RESEND", RESEND_KEY)]
    ]
    moved = browser.post("/dashboard/providers/", {"action": "move-up", "provider": "RESEND"})
    already_first = browser.post("/dashboard/providers/", {"action": "move-up", "provider": "RESEND"})
    removed = browser.post("/dashboard/providers/", {"action": "remove", "provider": "SENDGRID"})

    assert [answer.status_code for answer in [*added, moved, already_first, removed]] == [302] * 5
    assert log_of(holder.account) == [
        by_holder("provider_key.added", "SENDGRID"),
        by_holder("provider_key.added", "RESEND"),
        by_holder("provider_key.reordered", "RESEND"),
        by_holder("provider_key.removed", "SENDGRID"),
    ]


def test_the_domain_requested_verified_and_deleted_through_the_api_is_named(
    holder: Client, sendgrid: FakeSendGrid
) -> None:
    provider_key_set(account=holder.account, provider="SENDGRID", api_key=SENDGRID_KEY)
    forget_log(holder.account)

    requested = holder.post("/api/v1/user/domain/request", {"domain": "example.com"})
    still_pending = holder.post("/api/v1/user/domain/verify")
    sendgrid.mark_verified("em.example.com")
    verified = holder.post("/api/v1/user/domain/verify")
    verified_again = holder.post("/api/v1/user/domain/verify")
    deleted = holder.delete("/api/v1/user/domain")

    answers = [requested, still_pending, verified, verified_again, deleted]
    assert [answer.status_code for answer in answers] == [201, 200, 200, 200, 200]
    assert [verified.json()["data"]["status"], verified_again.json()["data"]["status"]] == ["verified"] * 2
    assert log_of(holder.account) == [
        by_holder("domain.requested", "example.com"),
        by_holder("domain.verified", "example.com"),
        by_holder("domain.deleted", "example.com"),
    ]


def test_the_signing_secret_and_event_credentials_set_on_the_webhooks_page_never_show_their_value(
    holder: Client,
) -> None:
    browser = dashboard(holder.account)
    sendgrid_key, resend_secret = SendGridEvents().verification_key, ResendEvents().secret

    answers = [
        browser.post("/dashboard/webhooks/", {"action": "generate-signing-secret"}),
        browser.post("/dashboard/webhooks/", {"action": "rotate-signing-secret"}),
        browser.post("/dashboard/webhooks/", {"action": "delete-signing-secret"}),
        browser.post("/dashboard/webhooks/", {"action": "generate-postmark-password"}),
        browser.post("/dashboard/webhooks/", {"action": "set-sendgrid-key", "value": sendgrid_key}),
        browser.post("/dashboard/webhooks/", {"action": "set-resend-secret", "value": resend_secret}),
    ]

    assert [answer.status_code for answer in answers] == [200, 200, 302, 200, 302, 302]
    assert log_of(holder.account) == [
        by_holder("signing_secret.generated"),
        by_holder("signing_secret.rotated"),
        by_holder("signing_secret.deleted"),
        by_holder("tracking_credential.set", "POSTMARK"),
        by_holder("tracking_credential.set", "SENDGRID"),
        by_holder("tracking_credential.set", "RESEND"),
    ]


def test_an_event_endpoint_is_named_by_its_origin_without_its_credentials_path_or_query(holder: Client) -> None:
    url = "https://ci:hunter2@hooks.example.com/events?token=s3cr3t#part"
    created = holder.post("/api/v1/event-endpoints", {"url": url, "events": ["job.failed"]})
    deleted = holder.delete(f"/api/v1/event-endpoints/{created.json()['data']['id']}")

    assert (created.status_code, deleted.status_code) == (201, 200)
    masked = "https://hooks.example.com/***"
    assert log_of(holder.account) == [
        by_holder("event_endpoint.created", masked),
        by_holder("event_endpoint.deleted", masked),
    ]


def test_a_token_in_an_event_endpoints_path_is_in_no_entry(holder: Client, staff: DjangoClient) -> None:
    token = "XyZ0SECRET9token"
    urls = [
        f"https://hooks.slack.com/services/T0/B0/{token}",
        f"https://hooks.example.com:8443/{token}",
        "https://hooks.example.com",
    ]
    made = [holder.post("/api/v1/event-endpoints", {"url": url, "events": ["job.failed"]}) for url in urls]
    slack, port, bare = (answer.json()["data"]["id"] for answer in made)
    holder.delete(f"/api/v1/event-endpoints/{slack}")
    assert dashboard(holder.account).post("/dashboard/events/delete/", {"id": port}).status_code == 302
    chosen = {"action": "delete_selected", "_selected_action": [bare], "post": "yes"}
    assert staff.post("/admin/event_endpoints/eventendpoint/", chosen).status_code == 302

    entries = list(AuditEntry.objects.filter(account=holder.account).order_by("created_at", "id").values())
    assert [entry["target"] for entry in entries] == [
        "https://hooks.slack.com/***",
        "https://hooks.example.com:8443/***",
        "https://hooks.example.com",
        "https://hooks.slack.com/***",
        "https://hooks.example.com:8443/***",
        "https://hooks.example.com",
    ]
    assert [entry for entry in entries if token in str(entry)] == []
    assert token not in json.dumps(holder.get(AUDIT).json())
    assert token not in dashboard(holder.account).get("/dashboard/audit/").content.decode()


def test_addresses_suppressed_by_hand_are_recorded_and_those_providers_report_are_not(holder: Client) -> None:
    added = holder.post("/api/v1/suppressions", {"email": "Ada@Example.com"})
    already_there = holder.post("/api/v1/suppressions", {"email": "ada@example.com"})
    removed = holder.delete("/api/v1/suppressions/ada@example.com")
    bounced = Reported("gone@example.com", SuppressionReason.HARD_BOUNCE, "SENDGRID", uuid.uuid4())
    suppressions_record(account=holder.account, reported=[bounced], emits_events=False)

    assert [added.status_code, already_there.status_code, removed.status_code] == [201, 409, 200]
    assert Suppression.objects.filter(account=holder.account, email="gone@example.com").exists()
    assert log_of(holder.account) == [
        by_holder("suppression.added", "ada@example.com"),
        by_holder("suppression.removed", "ada@example.com"),
    ]


def test_a_holder_deleting_their_account_is_recorded(holder: Client) -> None:
    holder.account.user.set_password(PASSWORD)
    holder.account.user.save()

    deleted = dashboard(holder.account).post("/dashboard/account/delete/", {"password": PASSWORD})

    assert deleted.status_code == 302
    assert log_of(holder.account) == [by_holder("account.deleted")]


def test_behind_a_trusted_proxy_the_address_is_the_one_it_saw(holder: Client, settings: Any) -> None:
    settings.TRUSTED_PROXY_HOPS = 1
    holder.http.defaults["HTTP_X_FORWARDED_FOR"] = "192.0.2.1, 2001:db8::7"

    holder.post("/api/v1/suppressions", {"email": "ada@example.com"})

    assert log_of(holder.account) == [("suppression.added", "holder", "ada@example.com", "2001:db8::7")]


def test_a_request_without_an_address_records_none(holder: Client) -> None:
    holder.http.defaults["REMOTE_ADDR"] = ""

    holder.post("/api/v1/suppressions", {"email": "ada@example.com"})

    assert log_of(holder.account) == [("suppression.added", "holder", "ada@example.com", None)]


# --- staff --------------------------------------------------------------------------------------


def test_staffs_account_actions_in_the_admin_are_staffs(staff: DjangoClient, holder: Client) -> None:
    account = holder.account

    act(staff, "change_plan", account, apply="1", plan="indie")
    act(staff, "set_monthly_limit", account, apply="1", limit="500")
    act(staff, "set_monthly_limit", account, apply="1", limit="")
    act(staff, "set_rate_limit", account, apply="1", rate="1200")
    act(staff, "set_rate_limit", account, apply="1", rate="")
    act(staff, "soft_delete", account)
    act(staff, "restore", account)

    assert Account.objects.get(pk=account.pk).plan == "indie"
    assert log_of(account) == [
        by_staff("plan.changed", "indie"),
        by_staff("limit.changed", "500"),
        by_staff("limit.changed", "plan's quota"),
        by_staff("limit.changed", "1,200 requests a minute"),
        by_staff("limit.changed", "plan's rate"),
        by_staff("account.deleted"),
        by_staff("account.restored"),
    ]


def test_staff_restoring_through_the_admin_endpoint_is_staffs(staff_user: Any, holder: Client) -> None:
    account_delete(account=holder.account)
    forget_log(holder.account)
    endpoint = admin_session(staff_user)
    endpoint.defaults["REMOTE_ADDR"] = STAFF_IP

    restored = endpoint.post(f"/api/v1/admin/users/{holder.account.user_id}/restore")

    assert restored.status_code == 200
    assert log_of(holder.account) == [by_staff("account.restored")]


def test_staff_removing_an_address_or_an_endpoint_in_the_admin_is_staffs(staff: DjangoClient, holder: Client) -> None:
    holder.post("/api/v1/suppressions", {"email": "ada@example.com"})
    holder.post("/api/v1/event-endpoints", {"url": "https://hooks.example.com/events", "events": ["job.failed"]})
    forget_log(holder.account)
    suppression = Suppression.objects.get(account=holder.account)
    endpoint = holder.account.event_endpoints.get()

    for path, row in [("suppressions/suppression", suppression), ("event_endpoints/eventendpoint", endpoint)]:
        chosen = {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"}
        assert staff.post(f"/admin/{path}/", chosen).status_code == 302

    assert not Suppression.objects.filter(account=holder.account).exists()
    assert log_of(holder.account) == [
        by_staff("suppression.removed", "ada@example.com"),
        by_staff("event_endpoint.deleted", "https://hooks.example.com/***"),
    ]


# --- with which API key -------------------------------------------------------------------------


def test_an_entry_names_the_api_key_it_was_made_with_and_none_for_a_session_staff_or_an_operator(
    holder: Client, staff: DjangoClient
) -> None:
    ci = api_key_create(account=holder.account, name="CI", scope="full")
    forget_log(holder.account)

    by_key = APIClient(REMOTE_ADDR=HOLDER_IP).post(
        "/api/v1/suppressions", {"email": "ada@example.com"}, format="json", HTTP_X_API_KEY=ci
    )
    dashboard(holder.account).post("/dashboard/suppressions/", {"email": "bob@example.com"})
    act(staff, "change_plan", holder.account, apply="1", plan="indie")
    suppression_add(account=holder.account, email="cy@example.com")

    assert by_key.status_code == 201
    entries = AuditEntry.objects.filter(account=holder.account).order_by("created_at", "id")
    assert list(entries.values_list("actor", "target", "api_key__name", "api_key__mode")) == [
        ("holder", "ada@example.com", "CI", "live"),
        ("holder", "bob@example.com", None, None),
        (STAFF, "indie", None, None),
        ("operator", "cy@example.com", None, None),
    ]
    answered = holder.get(AUDIT).json()["data"]["data"]
    assert [entry["apiKey"] for entry in answered] == [None, None, None, {"name": "CI", "mode": "live"}]
    on_the_dashboard = page_text(dashboard(holder.account).get("/dashboard/audit/"))
    assert "ada@example.com holder API key “CI” (live) 203.0.113.7" in on_the_dashboard
    assert "bob@example.com holder 203.0.113.7" in on_the_dashboard
    in_the_admin = page_text(staff.get(f"/admin/accounts/account/{holder.account.pk}/change/"))
    assert f"Suppression added holder ada@example.com {HOLDER_IP} API key “CI” (live)" in in_the_admin


def test_a_revoked_keys_entries_still_name_it(holder: Client) -> None:
    ci = api_key_create(account=holder.account, name="CI")
    holder.http.post("/api/v1/suppressions", {"email": "ada@example.com"}, format="json", HTTP_X_API_KEY=ci)

    api_key_revoke(account=holder.account, name="CI")

    (added,) = [entry for entry in holder.get(AUDIT).json()["data"]["data"] if entry["action"] == "suppression.added"]
    assert added["apiKey"] == {"name": "CI", "mode": "live"}


# --- an operator --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_operators_commands_are_the_operators_without_an_address() -> None:
    email = "dev@example.com"
    run("createaccount", email, "--plan", "startup")
    account = Account.objects.get(user__email=email)
    endpoint = endpoint_create(account=account, url="https://hooks.example.com/events", events=["job.failed"])
    forget_log(account)

    for command in [
        ("apikey", email, "create", "--name", "CI"),
        ("apikey", email, "revoke", "CI"),
        ("rotateapikey", email),
        ("setplan", email, "indie"),
        ("setlimit", email, "500"),
        ("setlimit", email, "--plan-default"),
        ("setlimit", email, "--rate", "600"),
        ("setlimit", email, "--rate", "plan"),
        ("providerkey", email, "add", "sendgrid", "sendgrid-key"),
        ("providerkey", email, "remove", "sendgrid"),
        ("signingsecret", email, "generate"),
        ("signingsecret", email, "rotate"),
        ("signingsecret", email, "delete"),
        ("trackingsecret", email, "generate"),
        ("trackingsecret", email, "set", "sendgrid", SendGridEvents().verification_key),
        ("suppressions", email, "add", "ada@example.com"),
        ("suppressions", email, "remove", "ada@example.com"),
        ("eventendpoints", email, "delete", str(endpoint.id)),
        ("deleteaccount", email, "--no-input"),
    ]:
        call_command(*command, stdout=StringIO(), stderr=StringIO())

    assert log_of(account) == [
        by_operator("api_key.created", "CI"),
        by_operator("api_key.revoked", "CI"),
        by_operator("api_key.revoked", "Default"),
        by_operator("api_key.created", "Default"),
        by_operator("plan.changed", "indie"),
        by_operator("limit.changed", "500"),
        by_operator("limit.changed", "plan's quota"),
        by_operator("limit.changed", "600 requests a minute"),
        by_operator("limit.changed", "plan's rate"),
        by_operator("provider_key.added", "SENDGRID"),
        by_operator("provider_key.removed", "SENDGRID"),
        by_operator("signing_secret.generated"),
        by_operator("signing_secret.rotated"),
        by_operator("signing_secret.deleted"),
        by_operator("tracking_credential.set", "POSTMARK"),
        by_operator("tracking_credential.set", "SENDGRID"),
        by_operator("suppression.added", "ada@example.com"),
        by_operator("suppression.removed", "ada@example.com"),
        by_operator("event_endpoint.deleted", "https://hooks.example.com/***"),
        by_operator("account.deleted"),
    ]


@pytest.mark.django_db
def test_createaccount_records_the_first_key() -> None:
    run("createaccount", "dev@example.com")

    assert log_of(Account.objects.get(user__email="dev@example.com")) == [by_operator("api_key.created", "Default")]


def test_outside_a_request_the_operator_acts_unless_a_block_says_otherwise(holder: Client) -> None:
    assert current_actor() == OPERATING

    with acting_as("holder", HOLDER_IP) as actor:
        assert current_actor() == actor == Actor(name="holder", ip=HOLDER_IP)

    holder.get("/api/v1/ping")
    assert current_actor() == OPERATING  # a request's actor does not outlive it


# --- reading it: GET /api/v1/user/audit ----------------------------------------------------------


def entries_at(account: Account, *targets: str) -> list[AuditEntry]:
    """One `api_key.created` entry for each of ``targets``, a minute apart, the last one newest."""
    start = timezone.now() - timedelta(hours=1)
    return AuditEntry.objects.bulk_create(
        AuditEntry(
            account=account,
            action="api_key.created",
            actor="holder",
            target=target,
            ip=HOLDER_IP,
            created_at=start + timedelta(minutes=number),
        )
        for number, target in enumerate(targets)
    )


def as_answered(entry: AuditEntry) -> dict[str, Any]:
    return {
        "action": entry.action,
        "actor": entry.actor,
        "target": entry.target,
        "ip": entry.ip,
        "apiKey": {"name": entry.api_key.name, "mode": entry.api_key.mode} if entry.api_key else None,
        "createdAt": iso_utc(entry.created_at),
    }


def test_the_log_is_answered_newest_first_with_its_pagination(holder: Client) -> None:
    first, second, third = entries_at(holder.account, "first", "second", "third")

    answer = holder.get(AUDIT)

    assert answer.status_code == 200
    assert answer.json()["data"] == {
        "data": [as_answered(third), as_answered(second), as_answered(first)],
        "pagination": {"page": 1, "limit": 20, "total": 3, "totalPages": 1},
    }
    assert answer.json()["data"]["data"][0]["createdAt"].endswith("Z")


def test_the_log_pages_as_the_jobs_list_does(holder: Client) -> None:
    first, second, third = entries_at(holder.account, "first", "second", "third")

    newest = holder.get(AUDIT, limit="2").json()["data"]
    oldest = holder.get(AUDIT, limit="2", page="2").json()["data"]

    assert newest == {
        "data": [as_answered(third), as_answered(second)],
        "pagination": {"page": 1, "limit": 2, "total": 3, "totalPages": 2},
    }
    assert oldest == {
        "data": [as_answered(first)],
        "pagination": {"page": 2, "limit": 2, "total": 3, "totalPages": 2},
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [({"page": "0"}, "page must be a positive integer"), ({"limit": "many"}, "limit must be a positive integer")],
)
def test_a_bad_page_is_refused(holder: Client, params: dict[str, str], message: str) -> None:
    assert_error(holder.get(AUDIT, **params), 400, message)


def test_a_read_key_and_the_dashboards_session_may_read_it_a_send_key_may_not(holder: Client) -> None:
    entries_at(holder.account, "only")
    read_key = api_key_create(account=holder.account, name="reports", scope="read")
    send_key = api_key_create(account=holder.account, name="CI", scope="send")
    session = APIClient()
    session.force_login(holder.account.user)

    by_read_key = APIClient().get(AUDIT, HTTP_X_API_KEY=read_key)
    by_session = session.get(AUDIT)

    assert by_read_key.status_code == by_session.status_code == 200
    assert [entry["target"] for entry in by_read_key.json()["data"]["data"]] == ["CI", "reports", "only"]
    assert by_session.json()["data"] == by_read_key.json()["data"]
    assert_error(APIClient().get(AUDIT, HTTP_X_API_KEY=send_key), 403, SCOPE_REFUSED, "api_key_scope_refused")
    assert APIClient().get(AUDIT).status_code == 401


def test_another_accounts_entries_are_never_shown(holder: Client, make_client: Callable[..., Client]) -> None:
    other = make_client(Plan.STARTUP)
    entries_at(other.account, "theirs")
    (mine,) = entries_at(holder.account, "mine")

    assert holder.get(AUDIT).json()["data"]["data"] == [as_answered(mine)]
    assert [entry["target"] for entry in other.get(AUDIT).json()["data"]["data"]] == ["Default", "theirs"]


def test_no_entry_holds_a_key_a_secret_a_token_or_a_password(holder: Client) -> None:
    account = holder.account
    secrets = [
        api_key_create(account=account, name="CI"),
        signing_secret_generate(account=account),
        postmark_password_generate(account=account),
        "re_provider_secret_key",
        "pm-account-token",
        "hunter2",
    ]
    provider_key_set(account=account, provider="RESEND", api_key=secrets[3])
    provider_key_set(account=account, provider="POSTMARK", api_key="pm-key", account_token=secrets[4])
    endpoint_create(account=account, url="https://ci:hunter2@hooks.example.com/events", events=["job.failed"])

    answer = holder.get(AUDIT)

    text = json.dumps(answer.json())
    assert answer.json()["data"]["pagination"]["total"] == 6
    assert [secret for secret in secrets if secret in text] == []


# --- the admin ----------------------------------------------------------------------------------


def test_the_accounts_admin_page_shows_its_newest_50_entries_read_only(staff: DjangoClient, holder: Client) -> None:
    entries_at(holder.account, *(f"key-{number:02}" for number in range(1, 52)))

    page = staff.get(f"/admin/accounts/account/{holder.account.pk}/change/")

    text = page_text(page)
    assert page.status_code == 200
    assert "Audit log (the newest 50)" in text
    assert "key-51" in text
    assert text.index("key-51") < text.index("key-50") < text.index("key-02")
    assert "key-01" not in text  # the 51st newest
    assert f"API key created holder key-51 {HOLDER_IP}" in text
    assert "Add another Audit entry" not in text


def test_the_log_on_the_accounts_page_needs_its_own_view_permission(django_user_model: Any, holder: Client) -> None:
    entries_at(holder.account, "key-01")
    viewer = django_user_model.objects.create_user("viewer@notifyhub.local", password="pw-for-viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(content_type__app_label="accounts", codename="view_account"))
    browser = DjangoClient()
    browser.force_login(viewer)
    page = f"/admin/accounts/account/{holder.account.pk}/change/"

    without = browser.get(page)
    viewer.user_permissions.add(Permission.objects.get(content_type__app_label="accounts", codename="view_auditentry"))
    with_it = browser.get(page)

    assert without.status_code == with_it.status_code == 200
    assert "key-01" not in page_text(without)
    assert "key-01" in page_text(with_it)
