from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from notifications.models import Job
from tests.api.test_envelope import assert_error
from tests.api.test_ping import ISO_MILLIS
from tests.conftest import Client


def test_it_accepts_a_webhook_and_stores_the_job(
    free: Client, broker_messages: Callable[[], list[dict[str, Any]]], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = free.send_webhook(headers={"X-Trace": "abc"}, method="PUT")

    assert response.status_code == 202
    data = response.json()["data"]
    assert set(data) == {"jobId", "status", "type", "createdAt"}
    assert (data["status"], data["type"]) == ("pending", "webhook")
    assert ISO_MILLIS.fullmatch(data["createdAt"])
    job = Job.objects.get(id=data["jobId"])
    assert job.account == free.account
    assert job.priority == 5
    assert job.payload == {
        "url": "https://hooks.example.com/in",
        "method": "PUT",
        "headers": {"X-Trace": "abc"},
        "payload": {"event": "signup", "id": 42},
    }
    assert broker_messages() == [{"task": "notifications.deliver_job", "args": [data["jobId"]], "priority": 5}]


@pytest.mark.parametrize(("priority", "broker_priority"), [(1, 0), (5, 5), (10, 9)])
def test_priority_is_stored_and_passed_to_the_broker(
    free: Client,
    broker_messages: Callable[[], list[dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
    priority: int,
    broker_priority: int,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job_id = free.send_webhook(priority=priority).json()["data"]["jobId"]

    assert Job.objects.get(id=job_id).priority == priority
    assert broker_messages()[0]["priority"] == broker_priority


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"url": None}, "url must be a valid HTTPS URL"),
        ({"url": "http://hooks.example.com/in"}, "url must be a valid HTTPS URL"),
        ({"url": "ftp://hooks.example.com"}, "url must be a valid HTTPS URL"),
        ({"url": "https://"}, "url must be a valid HTTPS URL"),
        ({"url": "not a url"}, "url must be a valid HTTPS URL"),
        ({"url": 42}, "url must be a valid HTTPS URL"),
        # A port no connection can use.
        ({"url": "https://hooks.example.com:99999/in"}, "url must be a valid HTTPS URL"),
        ({"url": "https://hooks.example.com:65536/in"}, "url must be a valid HTTPS URL"),
        ({"url": "https://hooks.example.com:0/in"}, "url must be a valid HTTPS URL"),
        ({"url": "https://hooks.example.com:abc/in"}, "url must be a valid HTTPS URL"),
        ({"url": "https://[2001:db8::1]:70000/in"}, "url must be a valid HTTPS URL"),
        ({"payload": None}, "payload is required"),
        ({"payload": [1, 2]}, "payload must be an object"),
        ({"payload": "text"}, "payload must be an object"),
        ({"method": "GET"}, "method must be one of POST, PUT, PATCH, DELETE"),
        ({"method": "post"}, "method must be one of POST, PUT, PATCH, DELETE"),
        ({"headers": ["X-A"]}, "headers must be an object of string values"),
        ({"headers": {"X-A": 1}}, "headers must be an object of string values"),
        ({"headers": {"Bad Name": "v"}}, "headers has an invalid header name: 'Bad Name'"),
        # Braces in what the client sent are text, not the message's placeholders (once a 500).
        ({"headers": {"X-}{name}{": "v"}}, "headers has an invalid header name: 'X-}{name}{'"),
        ({"headers": {"X-A": "v\r\nX-Injected: 1"}}, "headers has an invalid value for X-A"),
        ({"priority": 3}, "priority must be one of 1, 5, 10"),
        ({"priority": "5"}, "priority must be one of 1, 5, 10"),
        ({"priority": True}, "priority must be one of 1, 5, 10"),
        ({"priority": 5.0}, "priority must be one of 1, 5, 10"),
        ({"idempotencyKey": 7}, "idempotencyKey must be a string"),
        ({"idempotencyKey": ""}, "idempotencyKey must not be empty"),
        ({"idempotencyKey": "k" * 256}, "idempotencyKey must be at most 255 characters"),
    ],
)
def test_it_rejects_bad_input_with_the_field_message(free: Client, overrides: dict[str, Any], message: str) -> None:
    body = {"url": "https://hooks.example.com/in", "payload": {"a": 1}, **overrides}
    body = {key: value for key, value in body.items() if value is not None}

    assert_error(free.post("/api/v1/notifications/webhook", body), 400, message)
    assert free.account.jobs.count() == 0


def test_a_missing_url_is_reported_first(free: Client) -> None:
    assert_error(free.post("/api/v1/notifications/webhook", {}), 400, "url must be a valid HTTPS URL")


def _payload_of_size(size: int) -> dict[str, str]:
    # {"d":"..."} is 8 bytes of JSON around the string.
    return {"d": "x" * (size - 8)}


def test_a_payload_of_exactly_10kb_is_accepted(free: Client) -> None:
    assert free.send_webhook(payload=_payload_of_size(10240)).status_code == 202


def test_a_payload_over_10kb_is_rejected(free: Client) -> None:
    assert_error(free.send_webhook(payload=_payload_of_size(10241)), 400, "payload must be at most 10kb")
    assert free.account.jobs.count() == 0


def test_the_payload_size_counts_utf8_bytes(free: Client) -> None:
    # 3,413 three-byte characters: 10,239 bytes of text in 3,413 characters.
    response = free.send_webhook(payload={"d": "€" * 3413})

    assert_error(response, 400, "payload must be at most 10kb")
