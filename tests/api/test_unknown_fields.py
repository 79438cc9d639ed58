"""A body field the API does not know is refused, never dropped: 400 `Unknown field: <name>` (`unknown_field`),
before any field is checked, on every operation that takes a JSON body (docs/rules.md, "Order of checks on a send").
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from customer_webhooks.models import App, Endpoint, Message
from domains.models import SenderDomain
from email_templates.models import TemplateVersion
from email_templates.services import template_create
from event_endpoints.models import EventEndpoint
from notifications.models import Job
from suppressions.models import Suppression
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import EMAIL, WEBHOOK, Client
from tests.factories import AppFactory, EndpointFactory
from tests.notifications.test_test_mode import with_test_key

# A recover's `since`, which may be neither ahead of the request nor older than the jobs are kept.
YESTERDAY = (datetime.now(UTC) - timedelta(days=1)).isoformat()
# Every operation with a JSON body: a body it takes, and what a Free account's valid body is answered (the domain's
# 403 is the plan's, not the body's).
BODIES: dict[tuple[str, str], tuple[dict[str, Any], int]] = {
    ("/api/v1/notifications/email", "post"): (EMAIL, 202),
    ("/api/v1/notifications/webhook", "post"): (WEBHOOK, 202),
    ("/api/v1/notifications/email/batch", "post"): ({"items": [EMAIL]}, 202),
    ("/api/v1/notifications/webhook/batch", "post"): ({"items": [WEBHOOK]}, 202),
    ("/api/v1/suppressions", "post"): ({"email": "gone@example.com"}, 201),
    ("/api/v1/event-endpoints", "post"): ({"url": "https://hooks.example.com/events", "events": ["job.failed"]}, 201),
    ("/api/v1/user/domain/request", "post"): ({"domain": "example.com"}, 403),
    ("/api/v1/templates", "post"): ({"alias": "receipt", "name": "Receipt", "subject": "Hi", "html": "<p>Hi</p>"}, 201),
    ("/api/v1/templates/{template}", "put"): ({"subject": "Hello", "html": "<p>Hello</p>"}, 200),
    ("/api/v1/templates/{template}/render", "post"): ({"data": {}}, 200),
    ("/api/v1/apps/{app}/messages", "post"): ({"eventType": "invoice.paid", "payload": {"n": 1}}, 202),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}/recover", "post"): ({"since": YESTERDAY}, 202),
    ("/api/v1/apps", "post"): ({"uid": "globex", "name": "Globex"}, 201),
    ("/api/v1/apps/{app}", "patch"): ({"name": "Acme GmbH"}, 200),
    ("/api/v1/apps/{app}/endpoints", "post"): ({"url": "https://hooks.example.com/acme"}, 201),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}", "patch"): ({"eventTypes": ["invoice.paid"]}, 200),
}
# The template a path's {template} names, and the app its {app} names, made before the request.
EXISTING_TEMPLATE = "welcome"
EXISTING_APP = "acme"
UNKNOWN = {"colour": "teal"}


def stored(client: Client) -> dict[str, int]:
    """How many the account has of each thing a body creates (a template's versions for a template)."""
    kinds = [Job, Suppression, EventEndpoint, SenderDomain, App, Message]
    counts = {kind.__name__: kind.objects.filter(account=client.account).count() for kind in kinds}
    return counts | {
        "TemplateVersion": TemplateVersion.objects.filter(template__account=client.account).count(),
        "Endpoint": Endpoint.objects.filter(app__account=client.account).count(),
    }


def test_the_table_holds_every_operation_that_takes_a_body(db: None) -> None:
    document = json.loads(APIClient().get("/api/v1/schema/?format=json").content)
    with_body = {
        (path, method)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    }

    assert with_body == set(BODIES)


@pytest.mark.parametrize(("path", "method"), list(BODIES))
def test_an_unknown_field_is_refused_and_nothing_is_stored(free: Client, path: str, method: str) -> None:
    body, accepted = BODIES[path, method]
    if "{template}" in path:
        template_create(account=free.account, alias=EXISTING_TEMPLATE, name="Welcome", subject="Hi", html="<p>Hi</p>")
        path = path.replace("{template}", EXISTING_TEMPLATE)
    if "{app}" in path:
        endpoint = EndpointFactory(app=AppFactory(account=free.account, uid=EXISTING_APP))
        path = path.replace("{app}", EXISTING_APP).replace("{endpoint_id}", str(endpoint.id))
    before = stored(free)

    refused = getattr(free.http, method)(path, {**body, **UNKNOWN}, format="json", HTTP_X_API_KEY=free.api_key)

    assert_error(refused, 400, "Unknown field: colour", "unknown_field")
    assert stored(free) == before
    assert getattr(free.http, method)(path, body, format="json", HTTP_X_API_KEY=free.api_key).status_code == accepted


def test_the_unknown_field_is_refused_before_any_field_is_checked(free: Client) -> None:
    refused = free.post("/api/v1/notifications/email", {"to": "not-an-address", "priority": 99, **UNKNOWN})

    assert_error(refused, 400, "Unknown field: colour", "unknown_field")


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({**EMAIL, "colour": "teal", "flavour": "lime"}, "colour"),
        ({"flavour": "lime", **EMAIL, "colour": "teal"}, "flavour"),
    ],
    ids=["colour first", "flavour first"],
)
def test_the_first_unknown_field_in_the_bodys_order_is_named(free: Client, body: dict[str, Any], named: str) -> None:
    assert_error(free.post("/api/v1/notifications/email", body), 400, f"Unknown field: {named}", "unknown_field")


def test_a_test_key_meets_the_same_refusal(free: Client) -> None:
    test_key = with_test_key(free)
    before = stored(free)

    assert_error(test_key.send_email(**UNKNOWN), 400, "Unknown field: colour", "unknown_field")
    assert_error(test_key.send_webhook(**UNKNOWN), 400, "Unknown field: colour", "unknown_field")
    assert stored(free) == before
    assert not any(before.values())
