"""Test keys call what test mode is for and nothing that reads or changes live data (docs/rules.md, "Test mode"):
each view names, per method, the modes of key that may call it, and a test key elsewhere is 403
`test_key_refused`, decided in one place (accounts/access.py's ``KeyModeAllows``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.db.models import Model
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.models import Account, AuditEntry, KeyMode, UsagePeriod
from accounts.services import api_key_create
from accounts.throttle import reset_rate_limits
from customer_webhooks.models import App, Message
from domains.models import SenderDomain
from email_templates.models import Template
from email_templates.services import template_create
from event_endpoints.models import EventEndpoint
from event_endpoints.services import endpoint_create
from notifications.models import Job
from suppressions.models import Suppression
from suppressions.services import suppression_add
from tests.accounts.test_api_keys import call
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client, ready_to_send
from tests.factories import AppFactory, EndpointFactory, JobFactory

TEST_KEY_REFUSED = "Test keys cannot read or change live data; use a live key"
SUPPRESSED = "gone@example.com"
# What test mode is for (docs/rules.md, "Test mode"): the sends and batches, the caller's own jobs, ping; reading
# and rendering the templates a test send renders (TEST_MODE_TEMPLATE_OPERATION); reading the apps and endpoints
# a test message goes to, an endpoint's secret aside, and the caller's own messages: sending, reading and recovering
# their deliveries (TEST_MODE_APP_OPERATION).
TEST_MODE_PATH = re.compile(r"/ping$|/notifications/(email|webhook)(/batch)?$|/jobs(/\{job_id\}(/retry|/cancel)?)?$")
TEST_MODE_TEMPLATE_OPERATION = re.compile(r"get /api/v1/templates.*|post /api/v1/templates/\{template\}/render")
TEST_MODE_APP_OPERATION = re.compile(
    r"get /api/v1/apps(/\{app\}(/endpoints(/\{endpoint_id\})?)?)?"
    r"|(get|post) /api/v1/apps/\{app\}/messages|get /api/v1/apps/\{app\}/messages/\{message_id\}"
    r"|post /api/v1/apps/\{app\}/endpoints/\{endpoint_id\}/recover"
)
# The account's live rows, each model by the column naming the account.
LIVE_ROWS: list[tuple[type[Model], dict[str, Any]]] = [
    (Job, {"test": False}),
    (Suppression, {}),
    (EventEndpoint, {}),
    (Template, {}),
    (App, {}),
    (Message, {"test": False}),
    (SenderDomain, {}),
    (AuditEntry, {}),
    (UsagePeriod, {}),
]


def expected_modes(path: str, method: str = "get") -> set[str]:
    operation = f"{method} {path}"
    if (
        TEST_MODE_PATH.search(path)
        or TEST_MODE_TEMPLATE_OPERATION.fullmatch(operation)
        or TEST_MODE_APP_OPERATION.fullmatch(operation)
    ):
        return {"live", "test"}
    return {"live"}


def key_operations() -> list[tuple[str, str, dict[str, Any]]]:
    """Every operation an API key may call, from the OpenAPI document the URL conf generates."""
    schema = json.loads(APIClient().get("/api/v1/schema/?format=json").content)
    return [
        (path, method, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if {"ApiKeyAuth": []} in operation.get("security", [])
    ]


def views_with_scopes(patterns: list[Any] | None = None) -> Iterator[Any]:
    """Every view class the URL conf serves that names the scopes of key that may call it."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from views_with_scopes(pattern.url_patterns)
        elif isinstance(pattern, URLPattern) and hasattr(getattr(pattern.callback, "cls", None), "key_scopes"):
            yield pattern.callback.cls


def live_rows(account: Account) -> dict[str, list[dict[str, Any]]]:
    return {
        model.__name__: list(model.objects.filter(account=account, **only).order_by("pk").values())  # type: ignore[attr-defined]
        for model, only in LIVE_ROWS
    }


@pytest.fixture
def live(startup: Client) -> dict[str, str]:
    """A paid account with live data of every kind, and the values that name it in a path."""
    ready_to_send(startup)
    job = JobFactory(account=startup.account)  # pending: a live key could cancel it
    suppression_add(account=startup.account, email=SUPPRESSED)
    endpoint = endpoint_create(account=startup.account, url="https://hooks.example.com/events", events=["job.failed"])
    template_create(account=startup.account, alias="welcome", name="Welcome", subject="Hi", html="<p>Hi</p>")
    # An app whose endpoint has the event endpoint's id: `{endpoint_id}` names a live row in both paths.
    app_endpoint = EndpointFactory(id=endpoint.id, app=AppFactory(account=startup.account, uid="acme"))
    message = Message.objects.create(
        account=startup.account, app=app_endpoint.app, event_type="invoice.paid", payload={"n": 1}
    )
    return {
        "message_id": str(message.id),
        "job_id": str(job.id),
        "endpoint_id": str(endpoint.id),
        "email": SUPPRESSED,
        "template": "welcome",
        "app": "acme",
    }


@pytest.fixture
def test_key(startup: Client) -> str:
    return api_key_create(account=startup.account, name="Laptop", mode=KeyMode.TEST)


def as_test_key(client: Client, test_key: str) -> Client:
    return Client(account=client.account, api_key=test_key, http=APIClient())


def test_every_operation_a_key_may_call_names_its_modes_as_the_rules_say(db: None) -> None:
    operations = key_operations()

    assert len(operations) >= 25
    for path, method, operation in operations:
        assert set(operation["x-api-key-modes"]) == expected_modes(path, method), (method, path)
        if "test" in operation["x-api-key-modes"]:
            assert "Test keys may call it too." in operation["description"], (method, path)
        else:
            assert "Test keys may not: it touches live data." in operation["description"], (method, path)
            assert "`test_key_refused`" in operation["responses"]["403"]["description"], (method, path)


def test_every_view_names_the_modes_of_each_method_it_names_scopes_for(db: None) -> None:
    views = set(views_with_scopes())

    assert len(views) >= 15
    for view in views:
        assert set(getattr(view, "key_modes", {})) == set(view.key_scopes), view.__name__


def test_a_test_key_calls_only_what_test_mode_is_for_and_touches_no_live_row(
    startup: Client, live: dict[str, str], test_key: str
) -> None:
    before = live_rows(startup.account)

    for path, method, operation in key_operations():
        reset_rate_limits()
        response = call(path, method, test_key, values=live)
        if "test" in operation["x-api-key-modes"]:
            assert response.status_code != 403, (method, path, response.json())
            assert live["job_id"] not in response.content.decode(), (method, path)
        else:
            assert_error(response, 403, TEST_KEY_REFUSED, "test_key_refused")

    assert live_rows(startup.account) == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/v1/suppressions", {"email": "new@example.com"}),
        ("delete", f"/api/v1/suppressions/{SUPPRESSED}", None),
        ("delete", "/api/v1/user/domain", None),
        ("post", "/api/v1/event-endpoints", {"url": "https://hooks.example.com/more", "events": ["job.failed"]}),
        ("post", "/api/v1/templates", {"alias": "more", "name": "More", "subject": "Hi", "html": "<p>Hi</p>"}),
        ("delete", "/api/v1/templates/welcome", None),
        ("get", "/api/v1/user/usage", None),
        ("get", "/api/v1/user/dashboard", None),
        ("get", "/api/v1/user/audit", None),
    ],
)
def test_a_test_key_neither_reads_nor_changes_live_data(
    startup: Client, live: dict[str, str], test_key: str, method: str, path: str, body: Any
) -> None:
    before = live_rows(startup.account)
    tester = APIClient()

    response = getattr(tester, method)(path, body, format="json", HTTP_X_API_KEY=test_key)

    assert_error(response, 403, TEST_KEY_REFUSED, "test_key_refused")
    assert live_rows(startup.account) == before
    live_key = getattr(APIClient(), method)(path, body, format="json", HTTP_X_API_KEY=startup.api_key)
    assert live_key.status_code in {200, 201}, live_key.json()


def test_a_refused_test_key_is_not_counted_by_the_rate_limit(free: Client) -> None:
    tester = as_test_key(free, api_key_create(account=free.account, name="Laptop", mode=KeyMode.TEST))

    for _ in range(10):
        assert_error(tester.get("/api/v1/user/usage"), 403, TEST_KEY_REFUSED, "test_key_refused")

    assert tester.get("/api/v1/ping").status_code == 200


def test_the_dashboard_session_is_not_a_key_and_reads_live_data(startup: Client, test_key: str) -> None:
    browser = APIClient()
    browser.force_login(startup.account.user)

    assert browser.get("/api/v1/user/audit").status_code == 200
    assert browser.get("/api/v1/user/usage").status_code == 200
