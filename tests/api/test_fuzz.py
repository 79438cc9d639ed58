"""Whatever a client sends, the API answers in the envelope with a 2xx or 4xx, never a 500."""

from __future__ import annotations

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
]
plausible = {
    "to": st.sampled_from(["user@example.com", "nope", ""]),
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
