"""An app's endpoints over the API: add, list, read, change, delete, and their secrets (docs/customer-webhooks.md)."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import AuditEntry, KeyMode, KeyScope
from core.crypto import decrypt, encrypt
from customer_webhooks.models import App, Endpoint
from customer_webhooks.selectors import endpoint_signing_secrets
from customer_webhooks.services import endpoint_create
from notifications.engine.app_endpoints import GONE
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client, done_elsewhere
from tests.customer_webhooks.conftest import APPS, keyed, patch
from tests.factories import ENDPOINT_SECRET, AppFactory, EndpointFactory

pytestmark = pytest.mark.django_db

ENDPOINTS = f"{APPS}/acme/endpoints"
URL = "https://hooks.acme.example/notifyhub"
NOT_FOUND = "Endpoint not found"
PRIVATE = "url must not point to a local or private network address"
TEST_KEY_REFUSED = "Test keys cannot read or change live data; use a live key"
SCOPE_REFUSED = "This API key's scope does not allow this request"


@pytest.fixture
def app(startup: Client) -> App:
    return AppFactory(account=startup.account, uid="acme")


def add(client: Client, **body: Any) -> Any:
    return client.post(ENDPOINTS, {"url": URL, **body})


def entries(client: Client, action: str) -> list[str]:
    return list(AuditEntry.objects.filter(account=client.account, action=action).values_list("target", flat=True))


def test_adding_an_endpoint_answers_201_with_a_secret_of_its_own_stored_and_recorded(startup: Client, app: App) -> None:
    response = add(startup, eventTypes=["invoice.paid", "user.signed-up"], description="Billing", rateLimit=10)

    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert data | {"id": None, "createdAt": None} == {
        "id": None,
        "url": URL,
        "eventTypes": ["invoice.paid", "user.signed-up"],
        "description": "Billing",
        "rateLimit": 10,
        "disabled": False,
        "disabledReason": None,
        "createdAt": None,
    }
    stored = Endpoint.objects.get(id=data["id"])
    assert (stored.app_id, stored.url, stored.event_types, stored.rate_limit) == (app.id, URL, data["eventTypes"], 10)
    secret = decrypt(stored.encrypted_secret)
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 24
    assert entries(startup, "endpoint.created") == ["https://hooks.acme.example/*** (app acme)"]


def test_the_least_an_endpoint_takes_is_a_url_and_it_then_receives_every_type(startup: Client, app: App) -> None:
    data = add(startup).json()["data"]

    assert (data["eventTypes"], data["description"], data["rateLimit"]) == ([], "", None)
    assert Endpoint.objects.get(id=data["id"]).receives("anything.at.all")


def test_each_endpoint_has_its_own_secret(startup: Client, app: App) -> None:
    first, second = (add(startup).json()["data"]["id"] for _ in range(2))

    secrets = {startup.get(f"{ENDPOINTS}/{endpoint}/secret").json()["data"]["secret"] for endpoint in (first, second)}

    assert len(secrets) == 2


def test_url_credentials_are_masked_and_kept_apart_encrypted(startup: Client, app: App) -> None:
    data = add(startup, url="https://user:s3cret@hooks.acme.example/in?token=abc").json()["data"]

    assert data["url"] == "https://***@hooks.acme.example/in?token=abc"
    stored = Endpoint.objects.get(id=data["id"])
    assert decrypt(stored.url_credentials or "") == "user:s3cret"
    assert entries(startup, "endpoint.created") == ["https://hooks.acme.example/*** (app acme)"]
    assert not AuditEntry.objects.filter(target__contains="s3cret").exists()


def test_the_url_read_back_with_its_credentials_masked_keeps_them(startup: Client, app: App) -> None:
    data = add(startup, url="https://user:s3cret@hooks.acme.example/in").json()["data"]

    again = startup.http.patch(
        f"{ENDPOINTS}/{data['id']}", {"url": data["url"]}, format="json", HTTP_X_API_KEY=startup.api_key
    )
    moved = startup.http.patch(
        f"{ENDPOINTS}/{data['id']}",
        {"url": "https://***@hooks.acme.example/moved"},
        format="json",
        HTTP_X_API_KEY=startup.api_key,
    )

    assert (again.status_code, moved.status_code) == (200, 200)
    stored = Endpoint.objects.get(id=data["id"])
    assert stored.url == "https://***@hooks.acme.example/moved"
    assert decrypt(stored.url_credentials or "") == "user:s3cret"
    assert len(entries(startup, "endpoint.updated")) == 1  # the URL read back unchanged is no change


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/hook",
        "https://127.0.0.1/hook",
        "https://10.0.0.5/hook",
        "https://[::1]/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://192.168.1.1:8443/hook",
    ],
)
def test_a_url_at_a_local_or_private_address_is_the_webhooks_400(startup: Client, app: App, url: str) -> None:
    assert_error(add(startup, url=url), 400, PRIVATE, "validation_failed")
    assert not Endpoint.objects.exists()


def test_a_private_address_is_taken_where_private_networks_are_allowed(
    startup: Client, app: App, settings: Any
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True

    assert add(startup, url="https://127.0.0.1:8443/hook").status_code == 201


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "http://hooks.acme.example/in"}, "url must be a valid HTTPS URL"),
        ({"url": None}, "url must be a valid HTTPS URL"),
        (
            {"eventTypes": ["Invoice.Paid"]},
            "eventTypes[0] must be event types: lowercase segments of a-z, 0-9, _ and - joined by dots, at most 128",
        ),
        ({"eventTypes": ["invoice..paid"]}, "eventTypes[0] must be event types"),
        ({"eventTypes": ["invoice.paid", ".paid"]}, "eventTypes[1] must be event types"),
        ({"eventTypes": ["invoice.paid."]}, "eventTypes[0] must be event types"),
        ({"eventTypes": ["a" * 129]}, "eventTypes[0] must be event types"),
        ({"eventTypes": [7]}, "eventTypes[0] must be event types"),
        ({"eventTypes": "invoice.paid"}, "eventTypes must be a list of at most 50 event types"),
        ({"eventTypes": [f"t{n}" for n in range(51)]}, "eventTypes must be a list of at most 50 event types"),
        ({"eventTypes": ["a.b", "c", "a.b"]}, "eventTypes names a.b twice"),
        ({"rateLimit": 0}, "rateLimit must be a whole number of deliveries a second, from 1 to 1,000, or null"),
        ({"rateLimit": 1001}, "rateLimit must be a whole number of deliveries a second, from 1 to 1,000, or null"),
        ({"rateLimit": "5"}, "rateLimit must be a whole number of deliveries a second"),
        ({"rateLimit": 2.5}, "rateLimit must be a whole number of deliveries a second"),
        ({"rateLimit": True}, "rateLimit must be a whole number of deliveries a second"),
        ({"description": "d" * 501}, "description must be at most 500 characters"),
        ({"disabled": True}, "Unknown field: disabled"),
    ],
)
def test_a_body_breaking_a_rule_is_a_400_and_stores_nothing(
    startup: Client, app: App, body: dict[str, Any], message: str
) -> None:
    response = add(startup, **body)

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert response.json()["code"] in {"validation_failed", "unknown_field"}
    assert not Endpoint.objects.exists()
    assert entries(startup, "endpoint.created") == []


def test_the_bounds_of_a_rate_limit_and_of_event_types_are_taken(startup: Client, app: App) -> None:
    types = [f"{'a' * 60}.{'b' * 60}.{n:05}" for n in range(50)]

    assert add(startup, rateLimit=1).json()["data"]["rateLimit"] == 1
    assert add(startup, rateLimit=1000, eventTypes=types).json()["data"]["eventTypes"] == types


def test_the_21st_endpoint_of_an_app_is_a_409(startup: Client, app: App) -> None:
    EndpointFactory.create_batch(20, app=app)

    assert_error(add(startup), 409, "An app may have at most 20 endpoints. Delete one first.", "endpoint_limit")
    assert Endpoint.objects.filter(app=app).count() == 20
    other = AppFactory(account=startup.account, uid="globex")
    assert startup.post(f"{APPS}/globex/endpoints", {"url": URL}).status_code == 201
    assert other.endpoints.count() == 1


def _waiting_on_a_lock() -> bool:
    """Whether a connection to this test's database waits for a lock (the server may serve other databases)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite takes one writer at a time: no race to run")
def test_an_add_racing_another_for_the_last_place_waits_for_it_then_is_a_409(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")
    EndpointFactory.create_batch(19, app=app)
    answers: list[Any] = []

    def add_at_once() -> None:
        try:
            answers.append(APIClient().post(ENDPOINTS, {"url": URL}, format="json", HTTP_X_API_KEY=startup.api_key))
        finally:
            connection.close()

    racing = threading.Thread(target=add_at_once)
    # Another add holds the app, its 20th endpoint not yet committed: this one waits for it, then counts it.
    with done_elsewhere(lambda: endpoint_create(app=app, url=URL)):
        racing.start()
        deadline = time.monotonic() + 10
        while not _waiting_on_a_lock():
            assert time.monotonic() < deadline
            time.sleep(0.02)
    racing.join(10)

    assert_error(answers[0], 409, "An app may have at most 20 endpoints. Delete one first.", "endpoint_limit")
    assert Endpoint.objects.filter(app=app).count() == 20


def test_the_list_holds_the_apps_endpoints_oldest_first(startup: Client, app: App) -> None:
    first = add(startup).json()["data"]
    second = add(startup, eventTypes=["invoice.paid"]).json()["data"]
    EndpointFactory(app=AppFactory(account=startup.account))

    assert startup.get(ENDPOINTS).json()["data"] == {"data": [first, second]}
    assert startup.get(f"{ENDPOINTS}/{first['id']}").json()["data"] == first
    assert startup.get(f"{APPS}/{app.id}/endpoints/{first['id']}").json()["data"] == first


def test_patch_changes_what_it_gives_and_records_it(startup: Client, app: App) -> None:
    data = add(startup, eventTypes=["invoice.paid"], description="Billing", rateLimit=5).json()["data"]
    path = f"{ENDPOINTS}/{data['id']}"

    response = patch(startup, path, {"url": "https://new.acme.example/", "eventTypes": [], "rateLimit": None})

    assert response.status_code == 200, response.json()
    assert response.json()["data"] == data | {"url": "https://new.acme.example/", "eventTypes": [], "rateLimit": None}
    stored = Endpoint.objects.get(id=data["id"])
    assert (stored.url, stored.event_types, stored.description, stored.rate_limit) == (
        "https://new.acme.example/",
        [],
        "Billing",
        None,
    )
    assert entries(startup, "endpoint.updated") == ["https://new.acme.example (app acme)"]
    assert patch(startup, path, {"description": None}).json()["data"]["description"] == ""


def test_patch_refuses_what_a_create_refuses(startup: Client, app: App) -> None:
    path = f"{ENDPOINTS}/{add(startup).json()['data']['id']}"

    assert_error(patch(startup, path, {"url": "https://10.1.2.3/in"}), 400, PRIVATE)
    assert_error(
        patch(startup, path, {"rateLimit": 0}),
        400,
        "rateLimit must be a whole number of deliveries a second, from 1 to 1,000, or null",
    )
    assert_error(patch(startup, path, {"disabled": "yes"}), 400, "disabled must be true or false")
    assert_error(patch(startup, path, {"secret": "whsec_x"}), 400, "Unknown field: secret", "unknown_field")
    assert Endpoint.objects.get().url == URL
    assert entries(startup, "endpoint.updated") == []


def test_disabling_and_enabling_an_endpoint_enabling_forgets_why_it_was_disabled(startup: Client, app: App) -> None:
    failing_since = timezone.now() - timedelta(days=5)
    endpoint = EndpointFactory(app=app, disabled=True, disabled_reason="failing", failing_since=failing_since)
    path = f"{ENDPOINTS}/{endpoint.id}"

    assert startup.get(path).json()["data"]["disabledReason"] == "failing"
    enabled = patch(startup, path, {"disabled": False}).json()["data"]
    assert (enabled["disabled"], enabled["disabledReason"]) == (False, None)

    endpoint.refresh_from_db()
    assert (endpoint.disabled, endpoint.disabled_reason, endpoint.failing_since) == (False, "", None)
    disabled = patch(startup, path, {"disabled": True}).json()["data"]
    assert (disabled["disabled"], disabled["disabledReason"]) == (True, "holder")
    endpoint.refresh_from_db()
    assert (endpoint.disabled, endpoint.disabled_reason) == (True, "")
    assert len(entries(startup, "endpoint.updated")) == 2


def test_the_reason_an_endpoint_is_disabled_is_in_its_answer(startup: Client, app: App) -> None:
    gone = EndpointFactory(app=app, disabled=True, disabled_reason=GONE)
    by_holder = EndpointFactory(app=app, disabled=True)
    enabled = EndpointFactory(app=app)

    listed = {item["id"]: item["disabledReason"] for item in startup.get(ENDPOINTS).json()["data"]["data"]}

    assert listed == {str(gone.id): "gone", str(by_holder.id): "holder", str(enabled.id): None}


def test_patch_changing_nothing_records_nothing(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app, url="https://***@hooks.acme.example/in", url_credentials=encrypt("u:p"))
    same = {"url": "https://u:p@hooks.acme.example/in", "disabled": False}

    assert patch(startup, f"{ENDPOINTS}/{endpoint.id}", same).status_code == 200
    assert patch(startup, f"{ENDPOINTS}/{endpoint.id}", {}).status_code == 200
    assert entries(startup, "endpoint.updated") == []


def test_delete_removes_it_and_records_it(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app, url="https://hooks.acme.example")

    response = startup.delete(f"{ENDPOINTS}/{endpoint.id}")

    assert response.status_code == 200
    assert response.json()["data"] == {"id": str(endpoint.id), "message": "Endpoint deleted"}
    assert not Endpoint.objects.exists()
    assert entries(startup, "endpoint.deleted") == ["https://hooks.acme.example (app acme)"]
    assert_error(startup.delete(f"{ENDPOINTS}/{endpoint.id}"), 404, NOT_FOUND, "endpoint_not_found")


def every_operation(client: Client, path: str) -> list[Any]:
    return [
        client.get(path),
        patch(client, path, {"description": "mine"}),
        client.get(f"{path}/secret"),
        client.post(f"{path}/secret/rotate"),
        client.delete(path),
    ]


@pytest.mark.parametrize("endpoint_id", [str(uuid.uuid4()), "not-a-uuid", "1"])
def test_an_unknown_endpoint_is_a_404(startup: Client, app: App, endpoint_id: str) -> None:
    for response in every_operation(startup, f"{ENDPOINTS}/{endpoint_id}"):
        assert_error(response, 404, NOT_FOUND, "endpoint_not_found")


def test_another_apps_endpoint_is_not_found_in_this_one(startup: Client, app: App) -> None:
    theirs = EndpointFactory(app=AppFactory(account=startup.account, uid="globex"))

    for response in every_operation(startup, f"{ENDPOINTS}/{theirs.id}"):
        assert_error(response, 404, NOT_FOUND, "endpoint_not_found")
    assert Endpoint.objects.get(id=theirs.id).description == ""


def test_another_accounts_endpoint_is_not_found(startup: Client, app: App, make_client: Any) -> None:
    theirs = EndpointFactory(app=AppFactory(account=make_client().account, uid="acme"))

    for response in every_operation(startup, f"{ENDPOINTS}/{theirs.id}"):
        assert_error(response, 404, NOT_FOUND, "endpoint_not_found")
    for response in every_operation(startup, f"{APPS}/{theirs.app_id}/endpoints/{theirs.id}"):
        assert_error(response, 404, f"App {theirs.app_id} not found", "app_not_found")
    assert Endpoint.objects.get(id=theirs.id).encrypted_secret == theirs.encrypted_secret
    assert AuditEntry.objects.filter(action__startswith="endpoint.").count() == 0


def test_the_secret_is_the_one_that_signs(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)

    response = startup.get(f"{ENDPOINTS}/{endpoint.id}/secret")

    assert response.status_code == 200
    assert response.json()["data"] == {"secret": ENDPOINT_SECRET}
    assert endpoint_signing_secrets(endpoint) == [ENDPOINT_SECRET]
    # Each read is recorded, with the key that read it; never the secret.
    (read,) = AuditEntry.objects.filter(account=startup.account, action="endpoint.secret_revealed")
    assert (read.target, read.actor) == ("https://hooks.example.com/*** (app acme)", "holder")
    assert read.api_key_id is not None
    assert ENDPOINT_SECRET.removeprefix("whsec_")[:12] not in read.target


def test_rotating_answers_a_new_secret_and_the_old_one_signs_beside_it_until_the_overlap_ends(
    startup: Client, app: App, settings: Any
) -> None:
    settings.SIGNING_SECRET_OVERLAP_SECONDS = 3600
    endpoint = EndpointFactory(app=app)

    response = startup.post(f"{ENDPOINTS}/{endpoint.id}/secret/rotate")

    assert response.status_code == 200, response.json()
    new = response.json()["data"]["secret"]
    assert new.startswith("whsec_")
    assert new != ENDPOINT_SECRET
    assert startup.get(f"{ENDPOINTS}/{endpoint.id}/secret").json()["data"] == {"secret": new}
    endpoint.refresh_from_db()
    assert endpoint_signing_secrets(endpoint) == [new, ENDPOINT_SECRET]
    overlap = endpoint.previous_signs_until - timezone.now()  # type: ignore[operator]
    assert timedelta(minutes=59) < overlap <= timedelta(hours=1)
    Endpoint.objects.filter(id=endpoint.id).update(previous_signs_until=timezone.now() - timedelta(seconds=1))
    endpoint.refresh_from_db()
    assert endpoint_signing_secrets(endpoint) == [new]
    targets = entries(startup, "endpoint.secret_rotated")
    assert targets == ["https://hooks.example.com/*** (app acme)"]
    assert not AuditEntry.objects.filter(target__contains=new.removeprefix("whsec_")[:12]).exists()


def test_a_second_rotation_drops_the_first_secret(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)

    first = startup.post(f"{ENDPOINTS}/{endpoint.id}/secret/rotate").json()["data"]["secret"]
    second = startup.post(f"{ENDPOINTS}/{endpoint.id}/secret/rotate").json()["data"]["secret"]

    endpoint.refresh_from_db()
    assert endpoint_signing_secrets(endpoint) == [second, first]


def test_without_an_overlap_the_old_secret_stops_signing_at_once(startup: Client, app: App, settings: Any) -> None:
    settings.SIGNING_SECRET_OVERLAP_SECONDS = 0
    endpoint = EndpointFactory(app=app)

    new = startup.post(f"{ENDPOINTS}/{endpoint.id}/secret/rotate").json()["data"]["secret"]

    endpoint.refresh_from_db()
    assert endpoint_signing_secrets(endpoint) == [new]
    assert (endpoint.previous_encrypted_secret, endpoint.previous_signs_until) == ("", None)


def test_a_read_key_reads_endpoints_but_not_the_secret_and_changes_nothing(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)
    reader = keyed(startup, scope=KeyScope.READ)
    path = f"{ENDPOINTS}/{endpoint.id}"

    assert reader.get(ENDPOINTS).status_code == 200
    assert reader.get(path).status_code == 200
    refused = [add(reader), *every_operation(reader, path)[1:]]
    for response in refused:
        assert_error(response, 403, SCOPE_REFUSED, "api_key_scope_refused")
    assert endpoint_signing_secrets(Endpoint.objects.get()) == [ENDPOINT_SECRET]


def test_a_send_key_calls_none_of_them(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)
    sender = keyed(startup, scope=KeyScope.SEND)

    for response in [sender.get(ENDPOINTS), add(sender), *every_operation(sender, f"{ENDPOINTS}/{endpoint.id}")]:
        assert_error(response, 403, SCOPE_REFUSED, "api_key_scope_refused")


def test_a_test_key_lists_and_reads_endpoints_but_not_the_secret_and_changes_nothing(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)
    tester = keyed(startup, mode=KeyMode.TEST)
    path = f"{ENDPOINTS}/{endpoint.id}"

    assert tester.get(ENDPOINTS).json()["data"]["data"][0]["id"] == str(endpoint.id)
    assert tester.get(path).json()["data"]["id"] == str(endpoint.id)
    for response in [add(tester), *every_operation(tester, path)[1:]]:
        assert_error(response, 403, TEST_KEY_REFUSED, "test_key_refused")
    assert Endpoint.objects.get().description == ""
    assert endpoint_signing_secrets(Endpoint.objects.get()) == [ENDPOINT_SECRET]
    assert AuditEntry.objects.filter(action__startswith="endpoint.").count() == 0
