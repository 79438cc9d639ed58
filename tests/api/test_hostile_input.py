"""Bodies built to break the parser are refused at the door in the envelope, and nothing is stored."""

from __future__ import annotations

import pytest

from notifications.models import Job
from tests.api.test_envelope import assert_error
from tests.conftest import Client

WEBHOOK_PATH = "/api/v1/notifications/webhook"
EMAIL_PATH = "/api/v1/notifications/email"


def post_raw(client: Client, path: str, body: str, **meta: str) -> object:
    return client.http.generic(
        "POST", path, body.encode(), content_type="application/json", HTTP_X_API_KEY=client.api_key, **meta
    )


@pytest.mark.parametrize("depth", [65, 995, 5000])
def test_a_deeply_nested_body_is_a_400(free: Client, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    body = f'{{"url": "https://hooks.example.com/in", "payload": {{"deep": {nested}}}}}'

    assert_error(post_raw(free, WEBHOOK_PATH, body), 400, "Request body must not be nested more than 64 levels deep")
    assert not Job.objects.exists()


def test_a_payload_nested_64_levels_is_accepted(free: Client) -> None:
    nested = "[" * 62 + "]" * 62
    body = f'{{"url": "https://hooks.example.com/in", "payload": {{"deep": {nested}}}}}'

    assert post_raw(free, WEBHOOK_PATH, body).status_code == 202  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (WEBHOOK_PATH, '{"url": "https://hooks.example.com/in", "payload": {"x": "\\ud800"}}', "payload"),
        (WEBHOOK_PATH, '{"url": "https://hooks.example.com/\\udfff", "payload": {}}', "url"),
        (
            WEBHOOK_PATH,
            '{"url": "https://a.example.com/", "payload": {}, "idempotencyKey": "k\\ud800"}',
            "idempotencyKey",
        ),
        (EMAIL_PATH, '{"to": "a@example.com", "subject": "\\ud83d", "body": "x"}', "subject"),
        (WEBHOOK_PATH, '{"url": "https://a.example.com/", "payload": {"\\udc00": 1}}', "payload"),
    ],
)
def test_an_unpaired_surrogate_is_a_400_naming_the_field(free: Client, path: str, body: str, field: str) -> None:
    message = f"{field} must be valid Unicode text (it holds an unpaired surrogate)"

    assert_error(post_raw(free, path, body), 400, message)
    assert not Job.objects.exists()


def test_a_surrogate_pair_is_one_character_and_accepted(free: Client) -> None:
    body = '{"url": "https://hooks.example.com/in", "payload": {"smile": "\\ud83d\\ude00"}}'

    response = post_raw(free, WEBHOOK_PATH, body)

    assert response.status_code == 202  # type: ignore[attr-defined]
    assert Job.objects.get().payload["payload"] == {"smile": "😀"}


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1E999"])
def test_a_number_beyond_a_double_is_a_400(free: Client, number: str) -> None:
    body = f'{{"url": "https://hooks.example.com/in", "payload": {{"x": {number}}}}}'

    assert_error(post_raw(free, WEBHOOK_PATH, body), 400, f"Request body has a number out of range: {number}")
    assert not Job.objects.exists()


def test_a_chunked_body_is_a_411_not_a_misleading_400(free: Client) -> None:
    body = '{"url": "https://hooks.example.com/in", "payload": {}}'

    # What a WSGI server passes for a chunked request: no Content-Length at all.
    response = post_raw(free, WEBHOOK_PATH, body, HTTP_TRANSFER_ENCODING="chunked", CONTENT_LENGTH="")

    assert_error(response, 411, "Send the request body with a Content-Length header, not chunked")
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("path", "overrides", "message"),
    [
        (WEBHOOK_PATH, {"idempotencyKey": "key\x00"}, "idempotencyKey must not contain NUL characters"),
        (EMAIL_PATH, {"subject": "Hi\x00there"}, "subject must not contain NUL characters"),
        (EMAIL_PATH, {"body": "<p>\x00</p>"}, "body must not contain NUL characters"),
        (WEBHOOK_PATH, {"headers": {"X-Mood": "😀"}}, "headers has an invalid value for X-Mood"),
        (WEBHOOK_PATH, {"headers": {"X-Latin": "caf\xe9"}}, "headers has an invalid value for X-Latin"),
        *[
            (
                WEBHOOK_PATH,
                {"headers": {name: "1"}},
                f"headers must not set {name}: it describes the connection, which NotifyHub manages",
            )
            for name in ["Transfer-Encoding", "Content-Length", "Host", "Connection", "Upgrade", "TE"]
        ],
        (EMAIL_PATH, {"to": "a@localhost"}, "to must be an email"),
        (EMAIL_PATH, {"to": "a@[127.0.0.1]"}, "to must be an email"),
        (EMAIL_PATH, {"to": "a@intranet"}, "to must be an email"),
    ],
)
def test_text_the_service_cannot_store_or_send_is_refused(
    startup: Client, path: str, overrides: dict[str, object], message: str
) -> None:
    send = startup.send_webhook if path == WEBHOOK_PATH else startup.send_email

    assert_error(send(**overrides), 400, message)
    assert not Job.objects.exists()


@pytest.mark.parametrize("to", ["user@example.com", "user@müller.de", "user@xn--e1afmkfd.xn--p1ai"])
def test_recipients_at_public_names_are_accepted(free: Client, to: str) -> None:
    assert free.send_email(to=to).status_code == 202  # type: ignore[attr-defined]


@pytest.mark.parametrize("headers", [{}, {"HTTP_X_API_KEY": "nh_wrong"}])
def test_a_401_names_both_ways_to_send_the_key(free: Client, headers: dict[str, str]) -> None:
    response = free.http.get("/api/v1/ping", **headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="NotifyHub", ApiKey realm="NotifyHub", header="X-API-Key"'
