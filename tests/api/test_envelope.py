from __future__ import annotations

import re

import pytest

from tests.api.test_ping import ISO_MILLIS
from tests.clients import APIClient
from tests.conftest import Client

# A condition's code: snake_case, stable (docs/errors.md).
CODE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


def assert_error(response: object, status: int, message: str, code: str | None = None) -> None:
    """The envelope of an error: its status and message, and a code (``code`` when given)."""
    assert response.status_code == status  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert body == {"success": False, "error": message, "code": body["code"], "timestamp": body["timestamp"]}
    assert ISO_MILLIS.fullmatch(body["timestamp"])
    assert CODE.fullmatch(body["code"]), body["code"]
    if code is not None:
        assert body["code"] == code


@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_an_unknown_api_route_is_a_404_in_the_envelope(db: None, method: str) -> None:
    response = getattr(APIClient(), method)("/api/v1/nowhere")

    assert_error(response, 404, "Not found")


@pytest.mark.parametrize("path", ["/api/v1/admin/users/a%0Ab/restore", "/api/v1/no%0Awhere"])
def test_an_api_path_with_a_newline_is_a_404_in_the_envelope(db: None, path: str) -> None:
    response = APIClient().post(path)

    assert_error(response, 404, "Not found")


def test_a_wrong_method_is_a_405_in_the_envelope(free: Client) -> None:
    response = free.get("/api/v1/notifications/webhook")

    assert_error(response, 405, 'Method "GET" not allowed.')


def test_malformed_json_is_a_400(free: Client) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook", '{"url": ', content_type="application/json", HTTP_X_API_KEY=free.api_key
    )

    assert_error(response, 400, "Request body must be valid JSON")


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "42", "null"])
def test_a_body_that_is_not_an_object_is_a_400(free: Client, body: str) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook", body, content_type="application/json", HTTP_X_API_KEY=free.api_key
    )

    assert_error(response, 400, "Request body must be a JSON object")


def test_nan_is_not_json(free: Client) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook",
        '{"url": "https://a.example.com", "payload": {"x": NaN}}',
        content_type="application/json",
        HTTP_X_API_KEY=free.api_key,
    )

    assert_error(response, 400, "Request body must be valid JSON")


def test_a_body_that_is_not_json_is_a_415(free: Client) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook", "url=x", content_type="text/plain", HTTP_X_API_KEY=free.api_key
    )

    assert_error(response, 415, "Content-Type must be application/json")


def test_an_oversized_body_is_a_413_and_stores_nothing(free: Client, settings: object) -> None:
    huge = '{"url": "https://a.example.com", "payload": {"x": "' + "a" * (600 * 1024) + '"}}'

    response = free.http.post(
        "/api/v1/notifications/webhook", huge, content_type="application/json", HTTP_X_API_KEY=free.api_key
    )

    assert_error(response, 413, "Request body must be at most 512 KB")
    assert free.account.jobs.count() == 0


def test_invalid_utf8_is_a_400(free: Client) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook",
        b'{"url": "\xff"}',
        content_type="application/json",
        HTTP_X_API_KEY=free.api_key,
    )

    assert_error(response, 400, "Request body must be valid JSON")


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "*/*", "application/json"])
def test_every_accept_header_gets_the_json_envelope(free: Client, accept: str) -> None:
    response = free.http.post(
        "/api/v1/notifications/webhook",
        '{"url": "https://hooks.example.com/in", "payload": {}}',
        content_type="application/json",
        HTTP_X_API_KEY=free.api_key,
        HTTP_ACCEPT=accept,
    )

    assert response.status_code == 202
    assert response["Content-Type"] == "application/json"
    assert response.json()["data"]["status"] == "pending"
