"""The client keeps up with the API: every operation of the OpenAPI document that an API key calls is a method of the
client, every method is an operation of the document, and each method's result has the fields of the operation's
answer. A new endpoint, or a new field, without its part of the client fails here; an operation left out is named
below with the reason."""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from tests.client.sdk import notifyhub
from tests.clients import APIClient

Resource = notifyhub._surface.Resource
api_name = notifyhub._decode.api_name

METHODS = ("get", "post", "put", "patch", "delete")
# The provider-event receivers (/api/v1/webhooks/<provider>/<customerId>) are not in the document: the email providers
# call them, each with the credential the account set up for it (docs/inbound-events.md).
LEFT_OUT = {
    ("GET", "/api/v1/health"): "the operators' readiness check, which takes no API key",
    ("GET", "/api/v1/info"): "the service's name, version and docs URL, which takes no API key",
    ("POST", "/api/v1/admin/users/{user_id}/restore"): "staff's, with an admin session; API keys are refused",
    ("DELETE", "/api/v1/admin/users/{user_id}/permanent"): "staff's, with an admin session; API keys are refused",
    ("GET", "/api/v1/user/domain/status"): "the same read as GET /api/v1/user/domain, which domain.get() calls",
    # The dashboard's mounts of the jobs operations (notifyhub/urls.py): the same views answering the same.
    ("GET", "/api/v1/user/jobs"): "the dashboard's mount of GET /api/v1/notifications/jobs (jobs.list())",
    ("GET", "/api/v1/user/jobs/{job_id}"): "the dashboard's mount of GET /api/v1/notifications/jobs/{job_id}",
    ("POST", "/api/v1/user/jobs/{job_id}/retry"): "the dashboard's mount of Retry Job (jobs.retry())",
    ("POST", "/api/v1/user/jobs/{job_id}/cancel"): "the dashboard's mount of Cancel Job (jobs.cancel())",
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    response = APIClient().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    schema: dict[str, Any] = response.json()
    return schema


@pytest.fixture(scope="module")
def client_methods() -> dict[tuple[str, str], tuple[str, Any]]:
    """(method, path) of each of the client's operations: its name (``nh.jobs.get``) and its definition."""
    client = notifyhub.NotifyHub("nh_" + "0" * 64, base_url="http://127.0.0.1:9")
    resources = {"nh": client, **{f"nh.{name}": r for name, r in vars(client).items() if isinstance(r, Resource)}}
    methods = {}
    for prefix, resource in resources.items():
        for name, definition in inspect.getmembers(type(resource), lambda member: hasattr(member, "route")):
            route = definition.route
            methods[(route.method, route.path)] = (f"{prefix}.{name}", definition)
    client.close()
    return methods


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def test_every_operation_is_a_method_of_the_client_or_left_out_with_its_reason(
    document: dict[str, Any], client_methods: dict[tuple[str, str], tuple[str, Any]]
) -> None:
    documented = operations(document).keys()

    assert sorted(documented - client_methods.keys() - LEFT_OUT.keys()) == [], "add a client method for each"
    assert sorted(client_methods.keys() - documented) == [], "a client method for an operation the API lacks"
    assert sorted(LEFT_OUT.keys() - documented) == [], "left out, and no longer in the document"
    assert sorted(LEFT_OUT.keys() & client_methods.keys()) == [], "left out, and a client method all the same"


def test_every_method_of_the_client_takes_an_api_key(
    document: dict[str, Any], client_methods: dict[tuple[str, str], tuple[str, Any]]
) -> None:
    documented = operations(document)

    without_key = [
        name
        for key, (name, _) in client_methods.items()
        if {"ApiKeyAuth": []} not in documented[key].get("security", [])
    ]

    assert without_key == []


def test_each_method_answers_every_field_of_its_operation(
    document: dict[str, Any], client_methods: dict[tuple[str, str], tuple[str, Any]]
) -> None:
    documented = operations(document)
    problems = []
    for key, (name, definition) in sorted(client_methods.items()):
        data = _answer_data(documented[key])
        result = get_type_hints(definition._build)["return"]
        (shape,) = get_args(result)
        if get_origin(result) is notifyhub._calls.Paging or get_origin(shape) is tuple:
            shape, data = (get_args(shape)[0] if get_origin(shape) is tuple else shape), _resolved(data, document)
            data = data["properties"]["data"]["items"]
        problems += _differences(shape, data, name, document)

    assert problems == []


def _answer_data(operation: dict[str, Any]) -> dict[str, Any]:
    (answer,) = (answer for status, answer in operation["responses"].items() if status.startswith("2"))
    data: dict[str, Any] = answer["content"]["application/json"]["schema"]["properties"]["data"]
    return data


def _resolved(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _differences(hint: Any, schema: dict[str, Any], where: str, document: dict[str, Any]) -> list[str]:
    """Where the dataclasses in ``hint`` and the objects of ``schema`` differ: in their fields, or in which are
    required (a field with a default, ``test``, is one the answer may leave out)."""
    schema = _resolved(schema, document)
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        kinds = [kind for kind in get_args(hint) if kind is not type(None)]
        if len(kinds) == 1:
            if dataclasses.is_dataclass(kinds[0]):  # an object or null: one of the object and null
                (schema,) = [option for option in schema.get("oneOf", [schema]) if option.get("type") != "null"]
            return _differences(kinds[0], schema, where, document)
        pairs = zip(kinds, schema["oneOf"], strict=True)
        return [problem for kind, option in pairs for problem in _differences(kind, option, where, document)]
    if origin is tuple:
        return _differences(get_args(hint)[0], schema["items"], where, document)
    if not (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        return []
    fields = {api_name(field.name): field for field in dataclasses.fields(hint)}
    required = {name for name, field in fields.items() if field.default is dataclasses.MISSING}
    documented, required_there = schema["properties"].keys(), set(schema.get("required", []))
    problems = []
    if fields.keys() != documented:
        missing, unknown = sorted(documented - fields.keys()), sorted(fields.keys() - documented)
        problems.append(f"{where}: {hint.__name__} lacks {missing} and has {unknown}, which the API does not")
    if required != required_there:
        problems.append(f"{where}: {hint.__name__} requires {sorted(required)}, the API {sorted(required_there)}")
    hints = get_type_hints(hint)
    for name, field in fields.items():
        if name in schema["properties"]:
            problems += _differences(hints[field.name], schema["properties"][name], f"{where}.{name}", document)
    return problems
