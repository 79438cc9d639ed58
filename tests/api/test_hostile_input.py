"""Bodies built to break the parser are refused at the door in the envelope, and nothing is stored."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest

from core.api.parsers import JSONObjectParser
from notifications.models import Job
from notifications.views.sends import SendWebhookBatchView
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


WEBHOOK_BATCH_PATH = "/api/v1/notifications/webhook/batch"
ITEMS_MESSAGE = "items must hold 1 to 100 notifications"


def empty_lists(count: int) -> str:
    return ",".join(["[]"] * count)


def timed_post(client: Client, path: str, body: str) -> tuple[Any, float]:
    """The answer to ``body`` and its seconds, after a first request has loaded the views (not this one's cost)."""
    post_raw(client, path, "{}")
    started = time.perf_counter()
    response = post_raw(client, path, body)
    return response, time.perf_counter() - started


@pytest.mark.parametrize(
    ("template", "status", "message"),
    [
        ('{{"items": [{lists}]}}', 400, ITEMS_MESSAGE),
        ("[{lists}]", 400, "Request body must be a JSON object"),
    ],
    ids=["items of empty lists", "a list"],
)
def test_a_batch_body_of_5_mib_of_empty_lists_is_refused_without_reading_it_all(
    startup: Client, settings: Any, template: str, status: int, message: str
) -> None:
    count = (settings.API_MAX_BATCH_BODY_BYTES - 20) // 3  # 1.7 million lists: decoded whole, 4 s and 140 MB
    body = template.format(lists=empty_lists(count))

    response, seconds = timed_post(startup, WEBHOOK_BATCH_PATH, body)

    assert_error(response, status, message)
    assert seconds < 1  # about 0.05 s; 4 s and more before
    assert not Job.objects.exists()


def test_a_batch_item_longer_than_a_single_sends_body_is_a_413_before_it_is_read_whole(
    startup: Client, settings: Any
) -> None:
    settings.API_MAX_BODY_BYTES = 64 * 1024
    item = f'{{"url": "https://hooks.example.com/in", "payload": {{"a": [{empty_lists(400_000)}]}}}}'

    response, seconds = timed_post(startup, WEBHOOK_BATCH_PATH, f'{{"items": [{item}]}}')

    assert_error(response, 413, "Each item must be at most 64 KB")
    assert seconds < 1  # about 0.05 s; 4 s and more before
    assert not Job.objects.exists()


def test_a_batch_field_longer_than_a_single_sends_body_is_a_413(startup: Client, settings: Any) -> None:
    settings.API_MAX_BODY_BYTES = 64 * 1024
    body = (
        f'{{"note": [{empty_lists(100_000)}], "items": [{{"url": "https://hooks.example.com/in", "payload": {{}}}}]}}'
    )

    assert_error(post_raw(startup, WEBHOOK_BATCH_PATH, body), 413, "Each field must be at most 64 KB")
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        '{"items": [{"url": "https://hooks.example.com/in", "payload": {"a": x}}, ' + " " * 600_000 + "{}]}",
        '{"items": [{}, {}] trailing',
        '{"items": [{},]}',
        '{"items": [{} {}]}',
        '{"items" [{}]}',
        '{"items": [{}], }',
        "{items: [{}]}",
        '{"items": [{"x": NaN}]}',
    ],
    ids=[
        "an invalid item before a long tail",
        "trailing text",
        "a trailing comma",
        "no comma",
        "no colon",
        "a comma before the end",
        "a bare name",
        "NaN",
    ],
)
def test_a_batch_body_that_is_not_json_is_a_400_as_any_body_is(startup: Client, settings: Any, body: str) -> None:
    settings.API_MAX_BODY_BYTES = 1024  # the body, longer, is read an item at a time

    assert_error(post_raw(startup, WEBHOOK_BATCH_PATH, body + " " * 2000), 400, "Request body must be valid JSON")


@pytest.mark.parametrize(
    "body",
    [
        ' \n{ "items" : [ {"url": "https://a.example.com/", "payload": {"t": "[{,]}\\"", "n": [1, 2.5, true, null]}} ,'
        ' {} ] , "x\\u0041": {"k": [1]} }\r\n',
        '{"it\\u0065ms": [{}]}',
        '{"items": []}',
        "{}",
        '{"items": {"a": [1]}}',
        '{"items": 5, "more": "text"}',
        '{"items": [{}], "items": [{}, {}]}',
        '{"items": [' + ", ".join(["{}"] * 100) + "]}",
    ],
)
def test_a_batch_body_within_its_caps_is_read_as_any_body_is(settings: Any, body: str) -> None:
    settings.API_MAX_BODY_BYTES = 100  # the body, longer, is read an item at a time
    padded = body + " " * 200

    read = JSONObjectParser().parse(io.BytesIO(padded.encode()), parser_context={"view": SendWebhookBatchView()})

    assert read == json.loads(body)
