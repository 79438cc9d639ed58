"""Bad input across the apps' operations, as the issue lists it: unknown apps, endpoints and messages, and another
account's ids and uids, are the same 404 whichever they are; the body's rules are 400s; every answer the envelope
with a ``code`` (docs/customer-webhooks.md, docs/errors.md)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from accounts.plans import Plan
from customer_webhooks.models import App, Endpoint
from tests.api.test_envelope import assert_error
from tests.conftest import Client
from tests.customer_webhooks.conftest import APPS, patch
from tests.factories import AppFactory, EndpointFactory

pytestmark = pytest.mark.django_db

MESSAGE_NOT_FOUND = "Message not found"
RATE_LIMIT_RULE = "rateLimit must be a whole number of deliveries a second, from 1 to 1,000, or null"
SINCE = {"since": "2026-01-01T00:00:00Z"}


@pytest.fixture
def app(startup: Client) -> App:
    app = AppFactory(account=startup.account, uid="acme")
    EndpointFactory(app=app)
    return app


def every_app_operation(client: Client, app: str) -> list[Any]:
    """One request of each operation that names an app, for an app named ``app``."""
    endpoint, message = f"{APPS}/{app}/endpoints/{uuid.uuid4()}", f"{APPS}/{app}/messages"
    return [
        client.get(f"{APPS}/{app}"),
        patch(client, f"{APPS}/{app}", {"name": "Mine"}),
        client.delete(f"{APPS}/{app}"),
        client.get(f"{APPS}/{app}/endpoints"),
        client.post(f"{APPS}/{app}/endpoints", {"url": "https://hooks.example.com/in"}),
        client.get(endpoint),
        patch(client, endpoint, {"description": "mine"}),
        client.delete(endpoint),
        client.get(f"{endpoint}/secret"),
        client.post(f"{endpoint}/secret/rotate"),
        client.post(f"{endpoint}/recover", {"since": "2026-11-01T00:00:00Z"}),
        client.get(message),
        client.post(message, {"eventType": "invoice.paid", "payload": {}}),
        client.get(f"{message}/{uuid.uuid4()}"),
    ]


@pytest.mark.parametrize(
    "reference",
    [
        "%00",  # a NUL, which PostgreSQL's text refuses: looked up, it was a 500
        "ac%00me",
        "a%20b",
        "x" * 65,
        "caf%C3%A9",
        "0F8FAD5B-D9CB-469F-A165-70867728950E",
    ],
)
def test_a_reference_no_app_has_is_a_404_on_every_operation(startup: Client, app: App, reference: str) -> None:
    for response in every_app_operation(startup, reference):
        assert response.status_code == 404, response.json()
        assert response.json()["code"] == "app_not_found"
    assert Endpoint.objects.filter(app=app).count() == 1


@pytest.mark.parametrize("named", ["id", "uid"])
def test_another_accounts_app_is_the_same_404_on_every_operation(
    startup: Client, make_client: Callable[..., Client], named: str
) -> None:
    theirs = AppFactory(account=make_client(Plan.STARTUP).account, uid="theirs")
    EndpointFactory(app=theirs)
    reference = str(theirs.id) if named == "id" else "theirs"

    for response in every_app_operation(startup, reference):
        assert_error(response, 404, f"App {reference} not found", "app_not_found")
    assert Endpoint.objects.filter(app=theirs).count() == 1


def test_a_message_not_the_apps_is_the_same_404_whichever_it_is(
    startup: Client, app: App, make_client: Callable[..., Client]
) -> None:
    globex = AppFactory(account=startup.account, uid="globex")
    EndpointFactory(app=globex)
    other = make_client(Plan.STARTUP)
    EndpointFactory(app=AppFactory(account=other.account, uid="acme"))
    body = {"eventType": "invoice.paid", "payload": {}}
    another_apps = startup.post(f"{APPS}/globex/messages", body).json()["data"]["messageId"]
    another_accounts = other.post(f"{APPS}/acme/messages", body).json()["data"]["messageId"]

    for message_id in (another_apps, another_accounts, str(uuid.uuid4()), "not-a-uuid", "%00", "1"):
        assert_error(startup.get(f"{APPS}/acme/messages/{message_id}"), 404, MESSAGE_NOT_FOUND, "message_not_found")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"rateLimit": 0}, RATE_LIMIT_RULE),
        ({"rateLimit": 1001}, RATE_LIMIT_RULE),
        ({"rateLimit": -1}, RATE_LIMIT_RULE),
        ({"eventTypes": ["Invoice.Paid"]}, "eventTypes[0] must be event types"),
        ({"eventTypes": ["invoice paid"]}, "eventTypes[0] must be event types"),
        ({"eventTypes": None}, "eventTypes must be a list of at most 50 event types"),
        ({"url": "https://[::ffff:10.0.0.1]/in"}, "url must not point to a local or private network address"),
        ({"url": "https://[fd00::1]/in"}, "url must not point to a local or private network address"),
        ({"url": "https://100.64.0.1/in"}, "url must not point to a local or private network address"),
        ({"url": "https://0.0.0.0/in"}, "url must not point to a local or private network address"),
        ({"url": "https://user:pass@10.0.0.1/in"}, "url must not point to a local or private network address"),
        ({"url": "https://foo.localhost/in"}, "url must not point to a local or private network address"),
    ],
)
def test_a_patch_breaking_a_rule_is_a_400_and_changes_nothing(
    startup: Client, app: App, body: dict[str, Any], message: str
) -> None:
    endpoint = Endpoint.objects.get(app=app)

    response = patch(startup, f"{APPS}/acme/endpoints/{endpoint.id}", body)

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert response.json()["code"] == "validation_failed"
    stored = Endpoint.objects.get(id=endpoint.id)
    assert (stored.url, stored.event_types, stored.rate_limit) == (endpoint.url, [], None)


@pytest.mark.parametrize(
    ("operation", "path"),
    [
        ("post", f"{APPS}"),
        ("patch", f"{APPS}/acme"),
        ("post", f"{APPS}/acme/endpoints"),
        ("post", f"{APPS}/acme/messages"),
        ("post", "ENDPOINT/recover"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_400_in_the_envelope(
    startup: Client, app: App, operation: str, path: str
) -> None:
    path = path.replace("ENDPOINT", f"{APPS}/acme/endpoints/{Endpoint.objects.get(app=app).id}")
    send = getattr(startup.http, operation)

    not_an_object = send(path, [SINCE], format="json", HTTP_X_API_KEY=startup.api_key)
    not_json = send(path, "{", content_type="application/json", HTTP_X_API_KEY=startup.api_key)

    assert_error(not_an_object, 400, "Request body must be a JSON object", "body_not_object")
    assert_error(not_json, 400, "Request body must be valid JSON", "invalid_json")
