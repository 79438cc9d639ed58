"""Whatever a client sends, the API answers in the envelope with a 2xx or 4xx, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.plans import Plan
from accounts.throttle import reset_rate_limits
from tests.conftest import Client

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
FIELDS = [
    "to",
    "subject",
    "body",
    "from",
    "priority",
    "idempotencyKey",
    "provider",
    "fallback",
    "url",
    "payload",
    "method",
    "headers",
    "cc",
    "bcc",
    "replyTo",
    "text",
    "tags",
    "metadata",
]
# Lists of addresses, some a recipient twice, some not addresses at all.
addresses = st.sampled_from(["user@example.com", "USER@example.com", "ann@example.com", "Ann <ann@example.com>", "x"])
plausible = {
    "to": st.sampled_from(["user@example.com", "nope", ""]),
    "cc": st.lists(addresses, max_size=3) | json_values,
    "bcc": st.lists(addresses, max_size=3) | json_values,
    "replyTo": addresses | st.lists(addresses, max_size=6) | json_values,
    "url": st.sampled_from(["https://hooks.example.com/x", "http://x.com", "https://10.0.0.1/"]),
    "priority": st.sampled_from([1, 5, 10, 0, "5"]),
    "provider": st.sampled_from(["SENDGRID", "RESEND", "POSTMARK", "x"]),
    "fallback": st.sampled_from(["SENDGRID", "RESEND", "POSTMARK", "x"]),
    "method": st.sampled_from(["POST", "PUT", "GET"]),
}
bodies = st.one_of(
    json_values,
    st.fixed_dictionaries({}, optional={name: plausible.get(name, json_values) for name in FIELDS}),
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def assert_envelope(response: Any) -> None:
    assert response.status_code < 500, response.content
    body = response.json()
    assert isinstance(body["success"], bool)
    assert isinstance(body["timestamp"], str)
    assert ("data" in body) if body["success"] else isinstance(body["error"], str)


@pytest.fixture
def client(make_client: Any) -> Client:
    return make_client(Plan.STARTUP)


@pytest.mark.parametrize("path", ["/api/v1/notifications/email", "/api/v1/notifications/webhook"])
@FUZZ
@given(body=bodies)
def test_send_endpoints_never_fail_on_bad_input(client: Client, path: str, body: Any) -> None:
    reset_rate_limits()
    assert_envelope(client.post(path, body))


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(["page", "limit", "type", "status"]), st.text(max_size=12).filter(lambda t: "\x00" not in t)
    )
)
def test_the_list_endpoint_never_fails_on_bad_parameters(client: Client, params: dict[str, str]) -> None:
    reset_rate_limits()
    assert_envelope(client.get("/api/v1/notifications/jobs", **params))


@FUZZ
@given(job_id=st.text(max_size=40).filter(lambda t: "/" not in t and "?" not in t and "#" not in t))
def test_job_ids_never_fail(client: Client, job_id: str) -> None:
    reset_rate_limits()
    assert_envelope(client.get(f"/api/v1/notifications/jobs/{job_id}"))


# Raw JSON text, so what no Python value can express reaches the parser too: deep nesting, lone
# surrogate escapes, numbers past a double's range, NUL, duplicate keys.
json_atoms = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=12).map(json.dumps),
    st.sampled_from(['"\\ud800"', '"\\udfff x"', '"\\u0000"', '"a\\u0000b"', "1e400", "-1e999", "1e-400", "0.0"]),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.sampled_from(["true", "false", "null"]),
)
raw_values = st.recursive(
    json_atoms,
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(json_atoms.filter(lambda atom: atom.startswith('"')), children), max_size=3).map(
            lambda pairs: "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"
        ),
    ),
    max_leaves=10,
)
nested = st.integers(min_value=1, max_value=1200).map(lambda depth: "[" * depth + "]" * depth)
raw_fields = {
    "url": st.sampled_from(['"https://hooks.example.com/in"']) | raw_values,
    "payload": st.one_of(raw_values, nested, raw_values.map(lambda value: f'{{"k":{value},"k":1}}')),
    "to": st.sampled_from(['"user@example.com"']) | raw_values,
    "subject": raw_values,
    "body": raw_values,
    "idempotencyKey": raw_values,
    "headers": raw_values,
}
raw_bodies = st.fixed_dictionaries({}, optional=raw_fields).map(
    lambda fields: "{" + ",".join(f"{json.dumps(name)}:{value}" for name, value in fields.items()) + "}"
)


@pytest.mark.parametrize("path", ["/api/v1/notifications/email", "/api/v1/notifications/webhook"])
@FUZZ
@given(body=raw_bodies)
def test_raw_json_never_fails_and_every_stored_job_reads_back(free_client: Client, path: str, body: str) -> None:
    reset_rate_limits()
    response = free_client.http.generic(
        "POST",
        path,
        body.encode("utf-8", "surrogatepass"),
        content_type="application/json",
        HTTP_X_API_KEY=free_client.api_key,
    )

    assert_envelope(response)
    if response.status_code == 202:
        reset_rate_limits()
        job_id = response.json()["data"]["jobId"]
        assert_envelope(read_back := free_client.get(f"/api/v1/notifications/jobs/{job_id}"))
        assert read_back.status_code == 200


@pytest.fixture
def free_client(make_client: Any) -> Client:
    return make_client(Plan.FREE)
