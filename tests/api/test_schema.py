from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from rest_framework import serializers

from core.api.fields import (
    DOMAIN_NAME_SCHEMA,
    EMAIL_SCHEMA,
    HEADERS_SCHEMA,
    HTTPS_URL_PATTERN,
    MAILBOX_SCHEMA,
    NAMED_ADDRESS_SCHEMA,
    TAGS_SCHEMA,
    DomainNameField,
    HeadersField,
    HttpsUrlField,
    MailboxField,
    StringMapField,
    TagsField,
    TextField,
    email_headers_field,
    metadata_field,
    text_pattern,
)
from notifications.views.sends import SendEmailView
from tests.clients import APIClient

KEY_ONLY = [{"ApiKeyAuth": []}, {"BearerAuth": []}]
ACCOUNT_HOLDER = [{"ApiKeyAuth": []}, {"BearerAuth": []}, {"cookieAuth": []}]
STAFF = [{"cookieAuth": []}]
# No credential at all: the operation names no security scheme.
PUBLIC: list[dict[str, list[str]]] = []
EVERY_CALLER = {400, 401, 403, 429}  # both key headers, no or a bad key, an inactive account, the rate limit
WITH_BODY = {411, 413, 415}

# Every operation: who may call it, and the error statuses it can answer.
OPERATIONS: dict[tuple[str, str], tuple[list[dict[str, list[str]]], set[int]]] = {
    ("/api/v1/ping", "get"): (KEY_ONLY, EVERY_CALLER),
    ("/api/v1/notifications/email", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/notifications/webhook", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/notifications/email/batch", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/notifications/webhook/batch", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/notifications/jobs", "get"): (KEY_ONLY, EVERY_CALLER),
    ("/api/v1/notifications/jobs/{job_id}", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/notifications/jobs/{job_id}/retry", "post"): (KEY_ONLY, EVERY_CALLER | {404, 411}),
    ("/api/v1/notifications/jobs/{job_id}/cancel", "post"): (KEY_ONLY, EVERY_CALLER | {404, 411}),
    ("/api/v1/suppressions", "get"): (KEY_ONLY, EVERY_CALLER),
    ("/api/v1/suppressions", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/suppressions/{email}", "delete"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/event-endpoints", "get"): (KEY_ONLY, EVERY_CALLER),
    ("/api/v1/event-endpoints", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/event-endpoints/{endpoint_id}", "delete"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/event-endpoints/{endpoint_id}/deliveries", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/templates", "get"): (KEY_ONLY, EVERY_CALLER),
    ("/api/v1/templates", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/templates/{template}", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/templates/{template}", "put"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404}),
    ("/api/v1/templates/{template}", "delete"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/templates/{template}/versions", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/templates/{template}/render", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404}),
    ("/api/v1/apps/{app}/messages", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/messages", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404, 409}),
    ("/api/v1/apps/{app}/messages/{message_id}", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}/recover", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404}),
    ("/api/v1/apps", "get"): (KEY_ONLY, EVERY_CALLER),
    ("/api/v1/apps", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {409}),
    ("/api/v1/apps/{app}", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}", "patch"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404, 409}),
    ("/api/v1/apps/{app}", "delete"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/endpoints", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/endpoints", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404, 409}),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}", "patch"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404}),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}", "delete"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}/secret", "get"): (KEY_ONLY, EVERY_CALLER | {404}),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}/secret/rotate", "post"): (KEY_ONLY, EVERY_CALLER | {404, 411}),
    ("/api/v1/apps/{app}/portal", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404}),
    ("/api/v1/apps/{app}/portal/revoke", "post"): (KEY_ONLY, EVERY_CALLER | WITH_BODY | {404}),
    ("/api/v1/user/usage", "get"): (ACCOUNT_HOLDER, EVERY_CALLER),
    ("/api/v1/user/audit", "get"): (ACCOUNT_HOLDER, EVERY_CALLER),
    ("/api/v1/user/dashboard", "get"): (ACCOUNT_HOLDER, EVERY_CALLER),
    ("/api/v1/user/jobs", "get"): (ACCOUNT_HOLDER, EVERY_CALLER),
    ("/api/v1/user/jobs/{job_id}", "get"): (ACCOUNT_HOLDER, EVERY_CALLER | {404}),
    ("/api/v1/user/jobs/{job_id}/retry", "post"): (ACCOUNT_HOLDER, EVERY_CALLER | {404, 411}),
    ("/api/v1/user/jobs/{job_id}/cancel", "post"): (ACCOUNT_HOLDER, EVERY_CALLER | {404, 411}),
    ("/api/v1/user/domain/status", "get"): (ACCOUNT_HOLDER, EVERY_CALLER | {404}),
    ("/api/v1/user/domain", "get"): (ACCOUNT_HOLDER, EVERY_CALLER | {404}),
    ("/api/v1/user/domain", "delete"): (ACCOUNT_HOLDER, EVERY_CALLER | {404}),
    ("/api/v1/user/domain/request", "post"): (ACCOUNT_HOLDER, EVERY_CALLER | WITH_BODY | {409, 502}),
    ("/api/v1/user/domain/verify", "post"): (ACCOUNT_HOLDER, EVERY_CALLER | {404, 411}),
    ("/api/v1/admin/users/{user_id}/restore", "post"): (STAFF, {403, 404, 409, 411}),
    ("/api/v1/admin/users/{user_id}/permanent", "delete"): (STAFF, {403, 404}),
    ("/api/v1/health", "get"): (PUBLIC, {503}),
    ("/api/v1/info", "get"): (PUBLIC, set()),
}
# Operations with a body: its component, its properties and the required ones.
REQUEST_BODIES = {
    ("/api/v1/notifications/email", "post"): (
        "EmailRequest",
        {"to", "subject", "body", "from", "priority", "idempotencyKey", "provider", "fallback", "sendAt"}
        | {"cc", "bcc", "replyTo", "text", "headers", "tags", "metadata", "attachments", "topic"}
        | {"template", "templateVersion", "data"},
        {"to"},
    ),
    ("/api/v1/notifications/webhook", "post"): (
        "WebhookRequest",
        {"url", "payload", "method", "headers", "priority", "idempotencyKey", "sendAt"},
        {"url", "payload"},
    ),
    ("/api/v1/notifications/email/batch", "post"): ("EmailBatchRequest", {"items"}, {"items"}),
    ("/api/v1/notifications/webhook/batch", "post"): ("WebhookBatchRequest", {"items"}, {"items"}),
    ("/api/v1/user/domain/request", "post"): ("DomainRequest", {"domain"}, {"domain"}),
    ("/api/v1/suppressions", "post"): ("SuppressionRequest", {"email", "topic"}, {"email"}),
    ("/api/v1/event-endpoints", "post"): ("EventEndpointRequest", {"url", "events"}, {"url", "events"}),
    ("/api/v1/templates", "post"): (
        "TemplateCreateRequest",
        {"alias", "name", "subject", "html", "text"},
        {"alias", "name", "subject", "html"},
    ),
    ("/api/v1/templates/{template}", "put"): (
        "TemplateUpdateRequest",
        {"name", "subject", "html", "text"},
        {"subject", "html"},
    ),
    ("/api/v1/templates/{template}/render", "post"): ("TemplateRenderRequest", {"data"}, {"data"}),
    ("/api/v1/apps/{app}/messages", "post"): (
        "MessageRequest",
        {"eventType", "payload", "idempotencyKey"},
        {"eventType", "payload"},
    ),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}/recover", "post"): ("EndpointRecoverRequest", {"since"}, {"since"}),
    ("/api/v1/apps", "post"): ("AppCreateRequest", {"uid", "name"}, {"name"}),
    ("/api/v1/apps/{app}", "patch"): ("PatchedAppRequest", {"uid", "name"}, set()),
    ("/api/v1/apps/{app}/endpoints", "post"): (
        "EndpointCreateRequest",
        {"url", "eventTypes", "description", "rateLimit"},
        {"url"},
    ),
    ("/api/v1/apps/{app}/endpoints/{endpoint_id}", "patch"): (
        "PatchedEndpointRequest",
        {"url", "eventTypes", "description", "rateLimit", "disabled"},
        set(),
    ),
}
PROVIDERS = ["SENDGRID", "RESEND", "POSTMARK"]
JOB_TYPES = ["email", "webhook"]
JOB_STATUSES = ["pending", "processing", "completed", "failed"]
# Words of the implementation that have no place in a client's documentation.
IMPLEMENTATION_WORDS = re.compile(
    r"bench|deep-cop|\bCPU\b|µs|hot path|:func:|docs/|\bDRF\b|serializer|drf-spectacular|shallow clone",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    response = APIClient().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        prefix = "#/components/schemas/"
        assert node["$ref"].startswith(prefix)
        node = schema["components"]["schemas"][node["$ref"].removeprefix(prefix)]
    return node


def enum_of(schema: dict[str, Any], node: dict[str, Any]) -> tuple[str, list[Any]]:
    resolved = resolve(schema, node)
    return resolved["type"], resolved["enum"]


def component(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return schema["components"]["schemas"][name]


def json_body(response: dict[str, Any]) -> dict[str, Any]:
    return response["content"]["application/json"]["schema"]


def test_the_openapi_document_describes_the_api(db: None) -> None:
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in [
        "/api/v1/ping",
        "/api/v1/notifications/email",
        "/api/v1/notifications/webhook",
        "/api/v1/notifications/jobs",
        "/api/v1/notifications/jobs/{job_id}",
        "/api/v1/notifications/jobs/{job_id}/retry",
    ]:
        assert path in paths
    accepted = paths["/api/v1/notifications/webhook"]["post"]["responses"]["202"]["content"]["application/json"]
    assert set(accepted["schema"]["properties"]) == {"success", "data", "timestamp"}
    request_fields = paths["/api/v1/notifications/email"]["post"]["requestBody"]["content"]["application/json"]
    assert "from" in json.dumps(request_fields) or "from" in json.dumps(schema["components"])


def test_the_docs_page_is_served(db: None) -> None:
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_the_document_is_valid_openapi(schema: dict[str, Any]) -> None:
    validate(schema)


def test_generating_the_document_warns_of_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    GENERATOR_STATS.reset()
    try:
        call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "schema.yaml"))
    except Exception as error:
        pytest.fail(f"{error}\n{capsys.readouterr().err}")


def test_the_document_lists_exactly_the_api_operations(schema: dict[str, Any]) -> None:
    listed = {(path, method) for path, operations in schema["paths"].items() for method in operations}

    assert listed == set(OPERATIONS)


def test_swagger_groups_the_operations_by_tag_with_the_staff_ones_last(schema: dict[str, Any]) -> None:
    tagged = {(path, method): op["tags"] for path, ops in schema["paths"].items() for method, op in ops.items()}
    listed = [tag["name"] for tag in schema["tags"]]

    # Swagger UI shows the groups in the order of the document's tags, then any tag not listed there.
    assert {tag for tags in tagged.values() for tag in tags} == set(listed)
    assert listed[0] == "ping"
    assert listed[-1] == "staff"
    assert all(tag.get("description") for tag in schema["tags"])
    # The admin operations, which only staff may call, and only they.
    staff = {operation: tags for operation, tags in tagged.items() if "staff" in tags}
    assert staff == {operation: ["staff"] for operation, (security, _) in OPERATIONS.items() if security == STAFF}
    assert staff
    assert all(path.startswith("/api/v1/admin/") for path, _ in staff)


@pytest.mark.parametrize(("path", "method"), list(OPERATIONS))
def test_each_request_body_has_its_own_component(schema: dict[str, Any], path: str, method: str) -> None:
    operation = schema["paths"][path][method]

    if (path, method) not in REQUEST_BODIES:
        assert "requestBody" not in operation
        return
    name, properties, required = REQUEST_BODIES[path, method]
    body = operation["requestBody"]
    # A PATCH's body, of optional fields alone, may be left out: it changes nothing then.
    assert body.get("required", False) is bool(required)
    assert set(body["content"]) == {"application/json"}
    assert body["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{name}"}
    assert set(component(schema, name)["properties"]) == properties
    assert set(component(schema, name).get("required", [])) == required
    assert component(schema, name)["additionalProperties"] is False


@pytest.mark.parametrize(("kind", "item"), [("email", "EmailRequest"), ("webhook", "WebhookRequest")])
def test_a_batch_holds_1_to_100_single_send_bodies_and_answers_each_in_its_slot(
    schema: dict[str, Any], kind: str, item: str
) -> None:
    operation = schema["paths"][f"/api/v1/notifications/{kind}/batch"]["post"]
    request = component(schema, f"{kind.capitalize()}BatchRequest")["properties"]["items"]
    answer = resolve(schema, json_body(operation["responses"]["202"]))["properties"]["data"]

    assert request == {
        "type": "array",
        "items": {"$ref": f"#/components/schemas/{item}"},
        "minItems": 1,
        "maxItems": 100,
    }
    slots = resolve(schema, answer)["properties"]["items"]
    assert slots["type"] == "array"
    assert slots["items"] == {"$ref": "#/components/schemas/BatchItemAnswer"}
    assert component(schema, "BatchItemAnswer") == {
        "oneOf": [{"$ref": "#/components/schemas/JobAccepted"}, {"$ref": "#/components/schemas/BatchItemRefused"}]
    }
    refused = component(schema, "BatchItemRefused")
    assert set(refused["required"]) == {"status", "error", "code"}
    assert enum_of(schema, refused["properties"]["status"]) == ("integer", [400, 403, 409])


def test_the_email_request_fields_have_their_types(schema: dict[str, Any]) -> None:
    email = component(schema, "EmailRequest")["properties"]

    assert enum_of(schema, email["priority"]) == ("integer", [1, 5, 10])
    assert enum_of(schema, email["provider"]) == ("string", PROVIDERS)
    assert enum_of(schema, email["fallback"]) == ("string", PROVIDERS)
    assert email["to"] == EMAIL_SCHEMA == {"type": "string", "format": "email", "maxLength": 254}
    assert email["from"] == MAILBOX_SCHEMA == {"anyOf": [EMAIL_SCHEMA, NAMED_ADDRESS_SCHEMA]}
    texts = [("subject", 998, True), ("body", 262_144, False), ("idempotencyKey", 255, True), ("text", 262_144, False)]
    for name, longest, single_line in texts:
        pattern = text_pattern(single_line=single_line)
        assert email[name] == {"type": "string", "minLength": 1, "maxLength": longest, "pattern": pattern}
    for name in ["cc", "bcc"]:
        assert email[name] == {"type": "array", "maxItems": 49, "uniqueItems": True, "items": EMAIL_SCHEMA}
    listed = {"type": "array", "minItems": 1, "maxItems": 5, "items": MAILBOX_SCHEMA}
    assert email["replyTo"] == {"anyOf": [MAILBOX_SCHEMA, listed]}
    assert email["tags"] == TAGS_SCHEMA
    assert (email["headers"]["maxProperties"], email["headers"]["additionalProperties"]["maxLength"]) == (50, 998)
    assert (email["metadata"]["maxProperties"], email["metadata"]["additionalProperties"]["maxLength"]) == (20, 500)


def test_the_email_request_pairs_a_fallback_with_another_provider(schema: dict[str, Any]) -> None:
    pairs = [{}, *({"provider": p} for p in PROVIDERS), *({"fallback": f} for f in PROVIDERS)]
    pairs += [{"provider": p, "fallback": f} for p in PROVIDERS for f in PROVIDERS]
    document = Draft202012Validator({"$ref": "#/components/schemas/EmailRequest", "components": schema["components"]})

    for pair in pairs:
        body = {"to": "user@example.com", "subject": "Hi", "body": "Hello", **pair}
        api = SendEmailView.InputSerializer(data=body)
        assert document.is_valid(body) == api.is_valid(), pair


def test_the_webhook_request_fields_have_their_types(schema: dict[str, Any]) -> None:
    webhook = component(schema, "WebhookRequest")["properties"]

    assert enum_of(schema, webhook["priority"]) == ("integer", [1, 5, 10])
    assert enum_of(schema, webhook["method"]) == ("string", ["POST", "PUT", "PATCH", "DELETE"])
    assert webhook["url"] == {"type": "string", "maxLength": 2048, "pattern": HTTPS_URL_PATTERN}
    assert webhook["payload"]["type"] == "object"
    assert webhook["headers"]["type"] == "object"
    assert webhook["headers"]["maxProperties"] == 50
    assert webhook["headers"]["additionalProperties"]["type"] == "string"


def test_the_domain_request_takes_a_host_name(schema: dict[str, Any]) -> None:
    domain = component(schema, "DomainRequest")["properties"]["domain"]

    assert (domain["type"], domain["format"], domain["maxLength"]) == ("string", "hostname", 253)


# Characters where a text field's rules bite: whitespace of each kind, line breaks, NUL, and two that are not
# whitespace to Python though they look it (U+FEFF, U+200B).
EDGE_CHARACTERS = "\x00\t\n\x0b\x0c\r\x1c\x1f \x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeffa-"
edge_texts = st.text(st.sampled_from(EDGE_CHARACTERS), max_size=5) | st.text(max_size=5)


def accepts(field: serializers.Field, value: Any) -> bool:
    try:
        field.run_validation(value)
    except serializers.ValidationError:
        return False
    return True


def documented(node: dict[str, Any], value: str) -> bool:
    return re.search(node["pattern"], value) is not None


@settings(max_examples=300, deadline=None)
@given(text=edge_texts, single_line=st.booleans())
def test_a_text_fields_pattern_in_the_document_takes_what_the_field_takes(text: str, single_line: bool) -> None:
    field = TextField(max_length=10, single_line=single_line)

    assert documented({"pattern": text_pattern(single_line=single_line)}, text) == accepts(field, text)


header_names = st.text(st.sampled_from("aZ-_.!\n :\x00é"), min_size=0, max_size=4) | st.sampled_from(
    ["Host", "CONTENT-LENGTH", "Te", "Tes", "X-Keep-Alive", "keep-alive"]
)


@settings(max_examples=300, deadline=None)
@given(name=header_names, value=st.text(st.sampled_from("a \t\n\r\x00\x7f~é"), max_size=3))
def test_a_header_in_the_document_is_one_the_field_takes(name: str, value: str) -> None:
    names = HEADERS_SCHEMA["propertyNames"]
    in_document = documented(names, name) and not documented(names["not"], name)
    in_document = in_document and documented(HEADERS_SCHEMA["additionalProperties"], value)

    assert in_document == accepts(HeadersField(), {name: value})


def in_map_document(field: StringMapField, key: str, value: str) -> bool:
    document = field.schema()
    names = document["propertyNames"]
    return (
        documented(names, key)
        and not documented(names["not"], key)
        and documented(document["additionalProperties"], value)
        and len(value) <= document["additionalProperties"]["maxLength"]
    )


email_header_names = st.text(st.sampled_from("aZ-_.!\n :\x00\x7fé~"), min_size=0, max_size=4) | st.sampled_from(
    ["From", "cc", "bCC", "Reply-to", "message-id", "List-Unsubscribe-Post", "X-From", "Tos"]
)


@settings(max_examples=300, deadline=None)
@given(name=email_header_names, value=st.text(st.sampled_from("a \t\n\r\x00\x7f~é:"), max_size=3))
def test_an_email_header_in_the_document_is_one_the_field_takes(name: str, value: str) -> None:
    field = email_headers_field()

    assert in_map_document(field, name, value) == accepts(field, {name: value})


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(st.sampled_from("aZ0_-. \n"), max_size=3) | st.sampled_from(["job_id", "JOB_ID", "k" * 40, "k" * 41]),
    value=st.text(st.sampled_from("a \n\x00é"), max_size=3),
)
def test_a_metadata_entry_in_the_document_is_one_the_field_takes(key: str, value: str) -> None:
    field = metadata_field(reserved=["job_id"])

    assert in_map_document(field, key, value) == accepts(field, {key: value})


@settings(max_examples=300, deadline=None)
@given(tag=st.text(st.sampled_from("aZ09_- .\n"), max_size=3) | st.sampled_from(["t" * 64, "t" * 65]))
def test_a_tag_in_the_document_is_one_the_field_takes(tag: str) -> None:
    assert documented(TAGS_SCHEMA["items"], tag) == accepts(TagsField(), [tag])


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(st.sampled_from('ab ,."\\<>()@\n\x00é'), max_size=4),
    space=st.sampled_from(["", " ", "  "]),
    address=st.sampled_from(["a@example.com", "a.b@mail.example.co.uk", "a@localhost", "a..b@example.com", "a@b"]),
)
def test_a_named_address_in_the_document_is_one_the_field_takes(name: str, space: str, address: str) -> None:
    value = f"{name}{space}<{address}>"

    assert documented(NAMED_ADDRESS_SCHEMA, value) == accepts(MailboxField(), value)


@settings(max_examples=300, deadline=None)
@given(name=st.from_regex(DOMAIN_NAME_SCHEMA["pattern"]).filter(lambda name: len(name) <= 253))
def test_a_domain_name_in_the_document_is_one_the_field_takes(name: str) -> None:
    assert accepts(DomainNameField(), name)


@settings(max_examples=300, deadline=None)
@given(url=st.from_regex(HTTPS_URL_PATTERN).filter(lambda url: len(urlsplit(url).hostname or "") <= 253))
def test_a_url_in_the_document_is_one_the_field_takes(url: str) -> None:
    assert accepts(HttpsUrlField(), url)


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/in",
        "https://0.a",
        "https://hooks.example.com/a b",
        "https://hooks.example.com:0/in",
        "https://hooks.example.com:65536/in",
        "https://hooks.example.com:99999/in",
    ],
)
def test_the_document_refuses_urls_the_field_refuses(url: str) -> None:
    assert not documented({"pattern": HTTPS_URL_PATTERN}, url)
    assert not accepts(HttpsUrlField(), url)


@pytest.mark.parametrize("name", ["JobAccepted", "JobSlim", "JobDetail"])
def test_the_job_shapes_give_type_and_status_as_enums(schema: dict[str, Any], name: str) -> None:
    job = component(schema, name)["properties"]

    assert enum_of(schema, job["type"]) == ("string", JOB_TYPES)
    assert enum_of(schema, job["status"]) == ("string", JOB_STATUSES)
    if name != "JobAccepted":
        assert enum_of(schema, job["priority"]) == ("integer", [1, 5, 10])


def test_the_job_shapes_are_the_ones_answered(schema: dict[str, Any]) -> None:
    def answered(path: str, method: str, status: str) -> dict[str, Any]:
        return json_body(schema["paths"][path][method]["responses"][status])["properties"]["data"]

    assert answered("/api/v1/notifications/email", "post", "202") == {"$ref": "#/components/schemas/JobAccepted"}
    for path in ["/api/v1/notifications/jobs", "/api/v1/user/jobs"]:
        assert answered(path, "get", "200") == {"$ref": "#/components/schemas/JobPage"}
    assert component(schema, "JobPage")["properties"]["data"]["items"] == {"$ref": "#/components/schemas/JobSlim"}
    for path in ["/api/v1/notifications/jobs/{job_id}", "/api/v1/user/jobs/{job_id}"]:
        assert answered(path, "get", "200") == {"$ref": "#/components/schemas/JobDetail"}
    requeued = component(schema, "JobRequeued")["properties"]
    assert enum_of(schema, requeued["status"]) == ("string", JOB_STATUSES)


def test_the_job_list_filters_are_enums(schema: dict[str, Any]) -> None:
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/notifications/jobs"]["get"]["parameters"]}

    assert set(parameters) == {"page", "limit", "type", "status", "to", "host", "tag"}
    assert all(parameter["in"] == "query" and not parameter.get("required") for parameter in parameters.values())
    assert parameters["type"]["schema"]["type"] == "string"
    assert sorted(parameters["type"]["schema"]["enum"]) == sorted(JOB_TYPES)
    assert parameters["status"]["schema"]["type"] == "string"
    assert sorted(parameters["status"]["schema"]["enum"]) == sorted(JOB_STATUSES)
    for name in ["page", "limit"]:
        assert parameters[name]["schema"]["type"] == "integer"
        assert parameters[name]["schema"]["minimum"] == 1


def test_the_tag_filter_is_documented_as_the_field_takes_it(schema: dict[str, Any]) -> None:
    for path in ["/api/v1/notifications/jobs", "/api/v1/user/jobs"]:
        (tag,) = [p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "tag"]
        assert {key: tag["schema"][key] for key in ("type", "minLength", "maxLength")} == {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
        }
        pattern = re.compile(tag["schema"]["pattern"])
        assert all(pattern.search(value) for value in ("Order_2026-q4", "x" * 64))
        assert not any(pattern.search(value) for value in ("", "two words", "naïve", "x" * 65, "x\n"))


def test_the_api_key_schemes_are_declared(schema: dict[str, Any]) -> None:
    schemes = schema["components"]["securitySchemes"]

    assert set(schemes) == {"ApiKeyAuth", "BearerAuth", "cookieAuth"}
    assert {k: schemes["ApiKeyAuth"][k] for k in ["type", "in", "name"]} == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    assert {k: schemes["BearerAuth"][k] for k in ["type", "scheme"]} == {"type": "http", "scheme": "bearer"}
    assert schema.get("security") is None  # no document-wide default: each operation says


@pytest.mark.parametrize(("path", "method"), list(OPERATIONS))
def test_each_operation_names_who_may_call_it(schema: dict[str, Any], path: str, method: str) -> None:
    security, _ = OPERATIONS[path, method]

    assert schema["paths"][path][method].get("security", []) == security


@pytest.mark.parametrize(("path", "method"), list(OPERATIONS))
def test_each_operation_lists_the_errors_it_answers(schema: dict[str, Any], path: str, method: str) -> None:
    _, errors = OPERATIONS[path, method]
    responses = schema["paths"][path][method]["responses"]

    assert {int(code) for code in responses if not code.startswith("2")} == errors
    for code in errors:
        assert responses[str(code)]["description"]
        assert json_body(responses[str(code)]) == {"$ref": "#/components/schemas/ErrorEnvelope"}
    assert set(component(schema, "ErrorEnvelope")["required"]) == {"success", "error", "code", "timestamp"}


def _texts(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary", "title") and isinstance(value, str):
                yield f"{where}/{key}", value
            else:
                yield from _texts(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _texts(item, f"{where}/{index}")


def test_the_descriptions_are_for_clients(schema: dict[str, Any]) -> None:
    texts = dict(_texts(schema))
    leaks = {where: text for where, text in texts.items() if IMPLEMENTATION_WORDS.search(text)}

    assert leaks == {}
    for path, method in OPERATIONS:
        assert texts[f"/paths/{path}/{method}/summary"]
        assert texts[f"/paths/{path}/{method}/description"]


FIRST_REQUESTS_AT_ONCE = """
import threading

import django

django.setup()
from django.test import Client

statuses, start = [], threading.Barrier(8)


def fetch():
    client = Client(HTTP_HOST="localhost")
    start.wait()
    statuses.append(client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").status_code)


threads = [threading.Thread(target=fetch) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(sorted(statuses))
"""


def test_a_fresh_process_serves_eight_first_requests_at_once() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(root)}

    run = subprocess.run(
        [sys.executable, "-c", FIRST_REQUESTS_AT_ONCE], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )

    assert run.stdout.strip().splitlines()[-1] == str([200] * 8), run.stderr[-2000:]


def test_get_job_status_documents_the_email_events(schema: dict[str, Any]) -> None:
    events = component(schema, "JobDetail")["properties"]["events"]
    event = component(schema, events["items"]["$ref"].rsplit("/", 1)[-1])

    assert list(event["properties"]) == ["type", "provider", "occurredAt", "recipient"]
    assert enum_of(schema, event["properties"]["type"]) == (
        "string",
        ["DELIVERED", "OPENED", "CLICKED", "BOUNCED", "SPAM_REPORT", "UNSUBSCRIBED", "DEFERRED"],
    )
    assert enum_of(schema, event["properties"]["provider"]) == ("string", ["SENDGRID", "RESEND", "POSTMARK"])
    assert "events" not in component(schema, "JobSlim")["properties"]


def test_get_job_status_documents_an_emails_skipped_recipients(schema: dict[str, Any]) -> None:
    job = component(schema, "JobDetail")
    skipped = job["properties"]["skippedRecipients"]
    recipient = component(schema, skipped["items"]["$ref"].rsplit("/", 1)[-1])

    assert skipped["type"] == "array"
    assert "skippedRecipients" not in job["required"]
    assert recipient["required"] == ["email", "reason"]
    assert enum_of(schema, recipient["properties"]["reason"]) == (
        "string",
        ["HARD_BOUNCE", "SPAM_REPORT", "UNSUBSCRIBED", "MANUAL"],
    )


RESPONSE_BODY = "$response.body#"
JOB_LINKS = {"notifications_jobs_retrieve", "notifications_jobs_retry_create", "notifications_jobs_cancel_create"}
USER_JOB_LINKS = {"user_jobs_retrieve", "user_jobs_retry_create", "user_jobs_cancel_create"}
DOMAIN_LINKS = {"user_domain_retrieve", "user_domain_verify_create", "user_domain_destroy"}
# The operations a success links to, by the operation answering: a job's status, retry and cancel, a domain's next
# steps.
LINKS = {
    "notifications_email_create": JOB_LINKS,
    "notifications_webhook_create": JOB_LINKS,
    "notifications_jobs_list": JOB_LINKS,
    "notifications_jobs_retrieve": JOB_LINKS - {"notifications_jobs_retrieve"},
    "notifications_jobs_retry_create": JOB_LINKS - {"notifications_jobs_retry_create"},
    "notifications_jobs_cancel_create": JOB_LINKS - {"notifications_jobs_cancel_create"},
    "user_jobs_list": USER_JOB_LINKS,
    "user_jobs_retrieve": USER_JOB_LINKS - {"user_jobs_retrieve"},
    "user_jobs_retry_create": USER_JOB_LINKS - {"user_jobs_retry_create"},
    "user_jobs_cancel_create": USER_JOB_LINKS - {"user_jobs_cancel_create"},
    "user_domain_request_create": DOMAIN_LINKS,
    "user_domain_retrieve": DOMAIN_LINKS - {"user_domain_retrieve"},
    "user_domain_status_retrieve": DOMAIN_LINKS - {"user_domain_retrieve"},
    "user_domain_verify_create": DOMAIN_LINKS - {"user_domain_verify_create"},
}


def pointed_at(schema: dict[str, Any], node: dict[str, Any], pointer: str) -> dict[str, Any] | None:
    """The schema of what a JSON pointer names in a value of ``node``'s schema, if the schema declares it."""
    for step in pointer.strip("/").split("/"):
        node = resolve(schema, node)
        node = node.get("items", {}) if step.isdigit() else node.get("properties", {}).get(step)
        if node is None:
            return None
    return resolve(schema, node)


def test_each_link_leads_to_an_operation_with_the_parameters_its_answer_holds(schema: dict[str, Any]) -> None:
    operations = {
        operation["operationId"]: operation for methods in schema["paths"].values() for operation in methods.values()
    }
    linked = {
        source: {link["operationId"]: (response, link) for link in response["links"].values()}
        for source, operation in operations.items()
        for response in operation["responses"].values()
        if "links" in response
    }

    assert {source: set(targets) for source, targets in linked.items()} == LINKS
    for targets in linked.values():
        for target, (response, link) in targets.items():
            parameters = link.get("parameters", {})
            assert set(parameters) == {p["name"] for p in operations[target].get("parameters", []) if p["in"] == "path"}
            for expression in parameters.values():
                assert expression.startswith(RESPONSE_BODY)
                pointer = expression.removeprefix(RESPONSE_BODY)
                assert pointed_at(schema, json_body(response), pointer) == {"type": "string"}, expression
