"""Every query parameter in the OpenAPI document declares its bound, the app refuses a value past it in the envelope,
and the longest query the document allows fits gunicorn's request line, so the app, not gunicorn, answers it
(docs/rules.md, "Limits")."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from drf_spectacular.generators import SchemaGenerator
from gunicorn.config import Config
from gunicorn.http.parser import RequestParser

from email_templates.services import template_create
from event_endpoints.services import endpoint_create
from tests.api.test_envelope import assert_error
from tests.conftest import Client

ROOT = Path(__file__).resolve().parents[2]
# A character of four bytes in UTF-8, twelve once percent-encoded: the longest a declared character can take.
WIDEST_CHARACTER = "\U0001f600"


def document() -> dict[str, Any]:
    """The document /api/v1/schema/ serves, generated as its view does (at collection, before a test client's host
    is allowed)."""
    schema: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return schema


def resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rpartition("/")[2]]
    return node


def query_parameters(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every query parameter of every operation: its operation's path, its name and its schema."""
    return [(path, name, parameter) for path, _, name, parameter in operation_query_parameters(schema)]


def operation_query_parameters(schema: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """Every query parameter of every operation: its operation's path and method, its name and its schema."""
    return [
        (path, method, parameter["name"], resolved(schema, parameter["schema"]))
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query"
    ]


DOCUMENT = document()
QUERY_PARAMETERS = query_parameters(DOCUMENT)
# An operation's path and method: most are GETs, a DELETE may take one too (a suppression's topic).
METHODS = {path: method for path, method, _, _ in operation_query_parameters(DOCUMENT)}
OPERATIONS_WITH_QUERIES = sorted({path for path, _, _ in QUERY_PARAMETERS})


def bound_of(schema: dict[str, Any]) -> str | None:
    """What bounds a parameter's value in the document, or None when nothing does."""
    if "enum" in schema:
        return "enum"
    if schema.get("type") == "string" and "maxLength" in schema:
        return "maxLength"
    if schema.get("type") == "integer" and "maximum" in schema and "minimum" in schema:
        return "range"
    return None


def past_the_bound(schema: dict[str, Any]) -> str:
    """A value just longer than the parameter allows."""
    if "enum" in schema:
        return "9" * (max(len(str(value)) for value in schema["enum"]) + 1)
    if schema["type"] == "integer":
        return str(schema["maximum"] + 1)
    return "a" * (schema["maxLength"] + 1)


def longest_allowed(schema: dict[str, Any]) -> str:
    """The longest value the document allows the parameter, once percent-encoded."""
    if "enum" in schema:
        return max((str(value) for value in schema["enum"]), key=len)
    if schema["type"] == "integer":
        return str(schema["maximum"])
    return WIDEST_CHARACTER * schema["maxLength"]


def with_ids(path: str, client: Client) -> str:
    """The operation's path with its path parameters filled by rows of the client's account."""
    if "{template}" in path:
        template_create(account=client.account, alias="welcome", name="Welcome", subject="Hi", html="<p>Hi</p>")
        return path.replace("{template}", "welcome")
    if "{endpoint_id}" not in path:
        return path
    endpoint = endpoint_create(account=client.account, url="https://hooks.example.com/events", events=["job.failed"])
    return path.replace("{endpoint_id}", str(endpoint.id))


def gunicorns_config() -> Config:
    """gunicorn's settings as gunicorn.conf.py leaves them: its own defaults where the file sets nothing."""
    config = Config()
    for name, value in runpy.run_path(str(ROOT / "gunicorn.conf.py")).items():
        if name in config.settings:
            config.set(name, value)
    return config


def test_the_document_has_query_parameters_to_check() -> None:
    assert {"/api/v1/notifications/jobs", "/api/v1/user/jobs", "/api/v1/suppressions"} <= set(OPERATIONS_WITH_QUERIES)
    assert ("/api/v1/user/jobs", "to") in {(path, name) for path, name, _ in QUERY_PARAMETERS}


@pytest.mark.parametrize(("path", "name", "schema"), QUERY_PARAMETERS, ids=[f"{p} {n}" for p, n, _ in QUERY_PARAMETERS])
def test_every_query_parameter_declares_its_bound(path: str, name: str, schema: dict[str, Any]) -> None:
    assert bound_of(schema) is not None, f"{name} of {path} declares no maxLength, range or enum: {schema}"


@pytest.mark.parametrize(("path", "name", "schema"), QUERY_PARAMETERS, ids=[f"{p} {n}" for p, n, _ in QUERY_PARAMETERS])
def test_a_value_past_the_bound_is_refused_in_the_envelope_naming_the_parameter(
    startup: Client, path: str, name: str, schema: dict[str, Any]
) -> None:
    call = getattr(startup, METHODS[path])
    response = call(f"{with_ids(path, startup)}?{name}={quote(past_the_bound(schema), safe='')}")

    message = response.json()["error"]
    assert message.startswith(f"{name} must "), message
    assert_error(response, 400, message, "validation_failed")


@pytest.mark.parametrize("path", OPERATIONS_WITH_QUERIES)
def test_the_longest_query_the_document_allows_reaches_the_app_through_gunicorn(startup: Client, path: str) -> None:
    query = "&".join(
        f"{name}={quote(longest_allowed(schema), safe='')}" for where, name, schema in QUERY_PARAMETERS if where == path
    )
    target = f"{with_ids(path, startup)}?{query}"
    request = f"{METHODS[path].upper()} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()

    parsed = next(iter(RequestParser(gunicorns_config(), [request], ("127.0.0.1", 50000))))
    answer = getattr(startup, METHODS[path])(target)

    assert parsed.query == query  # gunicorn read the line whole: no 414 of its own
    # (A template's longest `version` is one it does not have: the app's own 404 says so.)
    assert answer.status_code in (200, 400) or answer.json()["code"] == "template_version_not_found"
    assert answer.json()["success"] is (answer.status_code == 200)  # the app's envelope
