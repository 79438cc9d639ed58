"""Apps over the API: create, list, read, change, delete (docs/customer-webhooks.md)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from accounts.models import AuditEntry, KeyMode, KeyScope
from customer_webhooks.models import App, Endpoint
from tests.api.test_envelope import assert_error
from tests.conftest import Client
from tests.customer_webhooks.conftest import APPS, keyed, patch
from tests.factories import AppFactory, EndpointFactory

pytestmark = pytest.mark.django_db


def create(client: Client, **body: Any) -> Any:
    return client.post(APPS, {"name": "Acme Inc", **body})


def test_creating_an_app_answers_201_stores_it_and_records_it(startup: Client) -> None:
    response = create(startup, uid="acme")

    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert set(data) == {"id", "uid", "name", "createdAt"}
    assert (data["uid"], data["name"]) == ("acme", "Acme Inc")
    stored = App.objects.get(account=startup.account)
    assert (str(stored.id), stored.uid, stored.name) == (data["id"], "acme", "Acme Inc")
    entry = AuditEntry.objects.get(account=startup.account, action="app.created")
    assert (entry.target, entry.actor) == ("acme", "holder")


def test_an_app_without_a_uid_is_named_by_its_id(startup: Client) -> None:
    data = create(startup).json()["data"]

    assert data["uid"] is None
    assert startup.get(f"{APPS}/{data['id']}").json()["data"] == data
    assert AuditEntry.objects.get(account=startup.account, action="app.created").target == data["id"]


def test_an_app_is_found_by_its_id_or_its_uid(startup: Client) -> None:
    data = create(startup, uid="cus_42:eu.1").json()["data"]

    assert startup.get(f"{APPS}/{data['id']}").json()["data"] == data
    assert startup.get(f"{APPS}/{data['id'].upper()}").json()["data"] == data
    assert startup.get(f"{APPS}/cus_42:eu.1").json()["data"] == data


def test_a_uid_taken_in_the_account_is_a_409_but_free_in_another(startup: Client, make_client: Any) -> None:
    create(startup, uid="acme")

    assert_error(create(startup, uid="acme"), 409, "An app with uid acme exists already", "app_uid_taken")
    assert App.objects.filter(account=startup.account).count() == 1
    assert AuditEntry.objects.filter(account=startup.account, action="app.created").count() == 1
    assert create(make_client(), uid="acme").status_code == 201


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"uid": "has space"}, "uid must be 1 to 64 of A-Z, a-z, 0-9, ., _, : and -"),
        ({"uid": "a/b"}, "uid must be 1 to 64 of A-Z, a-z, 0-9, ., _, : and -"),
        ({"uid": "a" * 65}, "uid must be 1 to 64 of A-Z, a-z, 0-9, ., _, : and -"),
        ({"uid": ""}, "uid must be 1 to 64 of A-Z, a-z, 0-9, ., _, : and -"),
        ({"uid": 42}, "uid must be 1 to 64 of A-Z, a-z, 0-9, ., _, : and -"),
        ({"uid": "0f8fad5b-d9cb-469f-a165-70867728950e"}, "uid must not be shaped like a UUID"),
        ({"uid": "0F8FAD5BD9CB469FA16570867728950E"}, "uid must not be shaped like a UUID"),
        ({"name": ""}, "name must not be empty"),
        ({"name": "n" * 201}, "name must be at most 200 characters"),
        ({"name": "two\nlines"}, "name must be a single line"),
        ({"name": None}, "name is required"),
        ({"colour": "teal"}, "Unknown field: colour"),
    ],
)
def test_a_body_breaking_a_rule_is_a_400_and_stores_nothing(
    startup: Client, body: dict[str, Any], message: str
) -> None:
    assert_error(create(startup, **body), 400, message)
    assert not App.objects.exists()
    assert not AuditEntry.objects.filter(action="app.created").exists()


def test_a_missing_name_is_a_400(startup: Client) -> None:
    assert_error(startup.post(APPS, {"uid": "acme"}), 400, "name is required", "validation_failed")


def test_the_list_is_paged_newest_first(startup: Client, make_client: Any) -> None:
    for number in range(3):
        create(startup, uid=f"app-{number}")
    create(make_client(), uid="another-accounts")

    page = startup.get(APPS, limit=2).json()["data"]

    assert [app["uid"] for app in page["data"]] == ["app-2", "app-1"]
    assert page["pagination"] == {"page": 1, "limit": 2, "total": 3, "totalPages": 2}
    assert [app["uid"] for app in startup.get(APPS, limit=2, page=2).json()["data"]["data"]] == ["app-0"]
    assert_error(startup.get(APPS, page=0), 400, "page must be a positive integer", "validation_failed")


def test_patch_renames_and_changes_the_uid_and_records_it(startup: Client) -> None:
    app_id = create(startup, uid="acme").json()["data"]["id"]

    response = patch(startup, f"{APPS}/acme", {"name": "Acme GmbH", "uid": "acme-de"})

    assert response.status_code == 200, response.json()
    assert response.json()["data"] | {"createdAt": None} == {
        "id": app_id,
        "uid": "acme-de",
        "name": "Acme GmbH",
        "createdAt": None,
    }
    assert App.objects.get(id=app_id).uid == "acme-de"
    assert AuditEntry.objects.get(account=startup.account, action="app.updated").target == "acme-de"
    assert_error(startup.get(f"{APPS}/acme"), 404, "App acme not found", "app_not_found")


def test_patch_to_a_uid_another_app_has_is_a_409(startup: Client) -> None:
    create(startup, uid="acme")
    create(startup, uid="globex")

    assert_error(patch(startup, f"{APPS}/globex", {"uid": "acme"}), 409, "An app with uid acme exists already")
    assert App.objects.filter(uid="globex").exists()
    assert not AuditEntry.objects.filter(action="app.updated").exists()


def test_patch_changing_nothing_records_nothing(startup: Client) -> None:
    create(startup, uid="acme")

    assert patch(startup, f"{APPS}/acme", {"uid": "acme"}).status_code == 200
    assert patch(startup, f"{APPS}/acme", {}).status_code == 200
    assert not AuditEntry.objects.filter(action="app.updated").exists()


def test_delete_takes_the_endpoints_with_it_and_records_it(startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme")
    EndpointFactory(app=app)

    response = startup.delete(f"{APPS}/acme")

    assert response.status_code == 200
    assert response.json()["data"] == {"id": str(app.id), "uid": "acme", "message": "App deleted"}
    assert not App.objects.exists()
    assert not Endpoint.objects.exists()
    assert AuditEntry.objects.get(account=startup.account, action="app.deleted").target == "acme"
    assert_error(startup.delete(f"{APPS}/acme"), 404, "App acme not found", "app_not_found")


def test_an_app_without_a_uid_is_recorded_deleted_by_its_id(startup: Client) -> None:
    app = AppFactory(account=startup.account)

    assert startup.delete(f"{APPS}/{app.id}").json()["data"] == {
        "id": str(app.id),
        "uid": None,
        "message": "App deleted",
    }
    assert AuditEntry.objects.get(account=startup.account, action="app.deleted").target == str(app.id)


@pytest.mark.parametrize("named", ["id", "uid"])
def test_another_accounts_app_is_not_found_by_id_or_uid(startup: Client, make_client: Any, named: str) -> None:
    app = AppFactory(account=make_client().account, uid="theirs")
    reference = str(app.id) if named == "id" else "theirs"
    message = f"App {reference} not found"

    assert_error(startup.get(f"{APPS}/{reference}"), 404, message, "app_not_found")
    assert_error(patch(startup, f"{APPS}/{reference}", {"name": "Mine"}), 404, message, "app_not_found")
    assert_error(startup.delete(f"{APPS}/{reference}"), 404, message, "app_not_found")
    assert App.objects.get(id=app.id).name == app.name
    assert not AuditEntry.objects.filter(account=startup.account).exclude(action="api_key.created").exists()


@pytest.mark.parametrize("reference", [str(uuid.uuid4()), "nobody", "0f8fad5bd9cb469fa16570867728950e"])
def test_an_unknown_app_is_a_404(startup: Client, reference: str) -> None:
    assert_error(startup.get(f"{APPS}/{reference}"), 404, f"App {reference} not found", "app_not_found")


def test_a_read_key_lists_and_reads_but_may_not_change(startup: Client) -> None:
    create(startup, uid="acme")
    reader = keyed(startup, scope=KeyScope.READ)

    assert reader.get(APPS).status_code == 200
    assert reader.get(f"{APPS}/acme").status_code == 200
    for refused in (create(reader, uid="other"), patch(reader, f"{APPS}/acme", {"name": "X"})):
        assert_error(refused, 403, "This API key's scope does not allow this request", "api_key_scope_refused")
    assert_error(reader.delete(f"{APPS}/acme"), 403, "This API key's scope does not allow this request")
    assert list(App.objects.values_list("uid", "name")) == [("acme", "Acme Inc")]


def test_a_send_key_calls_none_of_them(startup: Client) -> None:
    create(startup, uid="acme")
    sender = keyed(startup, scope=KeyScope.SEND)

    for refused in (sender.get(APPS), sender.get(f"{APPS}/acme"), create(sender, uid="other")):
        assert_error(refused, 403, "This API key's scope does not allow this request", "api_key_scope_refused")


def test_a_test_key_lists_and_reads_but_may_not_change(startup: Client) -> None:
    create(startup, uid="acme")
    tester = keyed(startup, mode=KeyMode.TEST)

    assert tester.get(APPS).json()["data"]["pagination"]["total"] == 1
    assert tester.get(f"{APPS}/acme").json()["data"]["uid"] == "acme"
    message = "Test keys cannot read or change live data; use a live key"
    assert_error(create(tester, uid="other"), 403, message, "test_key_refused")
    assert_error(patch(tester, f"{APPS}/acme", {"name": "X"}), 403, message, "test_key_refused")
    assert_error(tester.delete(f"{APPS}/acme"), 403, message, "test_key_refused")
    assert list(App.objects.values_list("uid", "name")) == [("acme", "Acme Inc")]
