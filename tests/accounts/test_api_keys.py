"""Named API keys with scopes (docs/rules.md, "API keys and scopes"): several keys an account, each calling only what
its scope allows; revoked at once; the first key still rotated by the old commands."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.keys import API_KEY_PATTERN
from accounts.models import ApiKey, KeyMode
from accounts.plans import Plan
from accounts.selectors import active_api_keys
from accounts.services import api_key_create, api_key_issue, api_key_revoke
from accounts.throttle import reset_rate_limits
from core.errors import ApiKeyLimit, ApiKeyNameInvalid, ApiKeyNameTaken, ApiKeyNotFound
from tests.accounts.test_commands import ping, run
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client

SCOPE_REFUSED = "This API key's scope does not allow this request"
# Values for the path parameters: none has to exist, a refusal of scope comes before anything is looked up.
PATH_VALUES = {
    "job_id": "00000000-0000-0000-0000-000000000000",
    "endpoint_id": "00000000-0000-0000-0000-000000000000",
    "email": "someone@example.com",
    "template": "welcome",
    "app": "acme",
    "message_id": "00000000-0000-0000-0000-000000000000",
}


def expected_scopes(path: str, method: str) -> set[str]:
    """The design's rule: `send` keys send, batch, send a message to an app, cancel and ping; `read` keys GET (but
    an app's endpoint's secret, with which its reader could sign) and render a template (a preview changes nothing);
    everything else needs `full`."""
    if path == "/api/v1/ping":
        return {"full", "send", "read"}
    if (method == "get" and not path.endswith("/secret")) or path.endswith("/templates/{template}/render"):
        return {"full", "read"}
    if re.search(r"/notifications/(email|webhook)(/batch)?$|/cancel$", path) or path == "/api/v1/apps/{app}/messages":
        return {"full", "send"}
    return {"full"}


def key_operations() -> list[tuple[str, str, list[str]]]:
    """Every operation an API key may call, from the OpenAPI document the URL conf generates, with its scopes."""
    schema = json.loads(APIClient().get("/api/v1/schema/?format=json").content)
    return [
        (path, method, operation.get("x-api-key-scopes", []))
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if {"ApiKeyAuth": []} in operation.get("security", [])
    ]


def call(path: str, method: str, api_key: str, values: Mapping[str, str] = PATH_VALUES) -> Any:
    url = re.sub(r"\{(\w+)\}", lambda name: values[name.group(1)], path)
    return getattr(APIClient(), method)(url, {} if method == "post" else None, format="json", HTTP_X_API_KEY=api_key)


@pytest.fixture
def scoped_keys(startup: Client) -> dict[str, str]:
    """A key of each scope on one account."""
    return {
        "full": startup.api_key,
        "send": api_key_create(account=startup.account, name="CI", scope="send"),
        "read": api_key_create(account=startup.account, name="reports", scope="read"),
    }


def test_every_operation_a_key_may_call_names_its_scopes_as_the_design_says(db: None) -> None:
    operations = key_operations()

    assert len(operations) >= 25
    for path, method, scopes in operations:
        assert set(scopes) == expected_scopes(path, method), (method, path)


def test_each_scope_calls_exactly_the_operations_it_names(scoped_keys: dict[str, str]) -> None:
    for path, method, scopes in key_operations():
        for scope, api_key in scoped_keys.items():
            reset_rate_limits()
            response = call(path, method, api_key)
            if scope in scopes:
                assert response.status_code != 403 or response.json()["error"] != SCOPE_REFUSED, (scope, method, path)
            else:
                assert_error(response, 403, SCOPE_REFUSED, "api_key_scope_refused")


def test_a_refused_scope_leaves_nothing_behind(scoped_keys: dict[str, str], startup: Client) -> None:
    refused = APIClient().post(
        "/api/v1/notifications/webhook",
        {"url": "https://hooks.example.com/in", "payload": {}},
        format="json",
        HTTP_X_API_KEY=scoped_keys["read"],
    )

    assert_error(refused, 403, SCOPE_REFUSED, "api_key_scope_refused")
    assert not startup.account.jobs.exists()
    sent = APIClient().post(
        "/api/v1/notifications/webhook",
        {"url": "https://hooks.example.com/in", "payload": {}},
        format="json",
        HTTP_X_API_KEY=scoped_keys["send"],
    )
    assert sent.status_code == 202


def test_the_dashboard_session_is_not_a_key_and_keeps_every_operation(startup: Client) -> None:
    browser = APIClient()
    browser.force_login(startup.account.user)

    assert browser.get("/api/v1/user/usage").status_code == 200


def test_a_revoked_key_is_refused_at_once_and_the_others_go_on(startup: Client) -> None:
    ci = api_key_create(account=startup.account, name="CI", scope="send")
    assert ping(ci) == 200

    api_key_revoke(account=startup.account, name="CI")

    assert_error(APIClient().get("/api/v1/ping", HTTP_X_API_KEY=ci), 401, "Invalid API key", "api_key_invalid")
    assert startup.get("/api/v1/ping").status_code == 200
    with pytest.raises(ApiKeyNotFound, match=re.escape("There is no active API key named CI.")):
        api_key_revoke(account=startup.account, name="CI")


def test_an_account_has_at_most_ten_active_keys_each_named_once(startup: Client) -> None:
    for number in range(2, 11):
        api_key_create(account=startup.account, name=f"service {number}")

    with pytest.raises(ApiKeyLimit, match="at most 10 active API keys"):
        api_key_create(account=startup.account, name="one more")
    api_key_revoke(account=startup.account, name="service 2")
    with pytest.raises(ApiKeyNameTaken, match=re.escape("An active API key is named service 3 already.")):
        api_key_create(account=startup.account, name=" service 3 ")
    api_key_create(account=startup.account, name="service 2")  # a revoked key's name is free again
    assert active_api_keys(account=startup.account).count() == 10


@pytest.mark.parametrize("name", ["", "   ", "x" * 65, "two\nlines", "tab\there"])
def test_a_key_name_is_1_to_64_characters_on_one_line(startup: Client, name: str) -> None:
    with pytest.raises(ApiKeyNameInvalid, match="1 to 64 characters on one line"):
        api_key_create(account=startup.account, name=name)


def test_rotating_replaces_only_the_first_key_keeping_its_name_and_scope(startup: Client) -> None:
    ci = api_key_create(account=startup.account, name="CI", scope="send")
    rotated = api_key_issue(account=startup.account)

    assert ping(startup.api_key) == 401
    assert ping(rotated) == 200
    assert ping(ci) == 200
    assert [(key.name, key.scope) for key in active_api_keys(account=startup.account)] == [
        ("CI", "send"),
        ("Default", "full"),
    ]


def test_a_keys_last_use_is_recorded_once_a_minute(startup: Client) -> None:
    key = ApiKey.objects.get(account=startup.account)
    assert key.last_used_at is None

    startup.get("/api/v1/ping")
    first_use = ApiKey.objects.get(pk=key.pk).last_used_at
    assert first_use is not None
    with CaptureQueriesContext(connection) as queries:
        startup.get("/api/v1/ping")
    assert len(queries) == 1  # the key's lookup alone: this minute's use is recorded
    assert ApiKey.objects.get(pk=key.pk).last_used_at == first_use

    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now() - timedelta(seconds=61))
    startup.get("/api/v1/ping")
    assert ApiKey.objects.get(pk=key.pk).last_used_at > first_use


def test_the_apikey_command_creates_lists_and_revokes(make_client: Callable[..., Client]) -> None:
    holder = make_client(Plan.INDIE)
    email = holder.account.user.email

    created = run("apikey", email, "create", "--name", "CI", "--scope", "send")
    listed = run("apikey", email, "list")
    revoked = run("apikey", email, "revoke", "CI")

    assert created[0] == "Created the send API key CI. The key (shown once, store it now):"
    api_key = created[-1]
    assert API_KEY_PATTERN.fullmatch(api_key)
    assert [line.split("\t")[:2] for line in listed] == [["Default", "full"], ["CI", "send"]]
    assert all(api_key not in line and api_key[10:] not in line for line in listed)  # never a key
    assert listed[1].split("\t")[2] == f"{api_key[:10]}…"
    assert listed[0].endswith("last used never\tlive")
    assert revoked == [f"Revoked the API key CI of {email}."]
    assert ping(api_key) == 401


def test_the_apikey_command_makes_a_test_key_and_lists_its_mode(startup: Client) -> None:
    email = startup.account.user.email

    created = run("apikey", email, "create", "--name", "Laptop", "--test")

    assert created[0] == "Created the full test API key Laptop. The key (shown once, store it now):"
    assert ApiKey.objects.get(name="Laptop", account=startup.account).mode == KeyMode.TEST
    assert [line.split("\t")[-1] for line in run("apikey", email, "list")] == ["live", "test"]
    assert ping(created[-1]) == 200


def test_the_apikey_command_says_what_it_refuses(startup: Client) -> None:
    email = startup.account.user.email

    with pytest.raises(CommandError, match=re.escape("There is no active API key named nope.")):
        run("apikey", email, "revoke", "nope")
    with pytest.raises(CommandError, match=re.escape("An active API key is named Default already.")):
        run("apikey", email, "create", "--name", "Default")
    with pytest.raises(CommandError, match=re.escape("No account for nobody@example.com")):
        run("apikey", "nobody@example.com", "list")
