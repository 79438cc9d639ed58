"""The providers' anymail backends send the JSON anymail writes, byte for byte, its long strings streamed."""

from __future__ import annotations

import base64
import os
import tracemalloc
from typing import Any

import pytest
from anymail.backends import resend
from django.core.mail import EmailMultiAlternatives, get_connection

from providers.anymail_json import LONG_STRING, SLICE, StreamedJsonBody
from tests.fakes.providers import FakePostmark, FakeProvider, FakeResend, FakeSendGrid

KEY = "test-key"
FILE = os.urandom(3 * SLICE + 5)
# Escapes json writes (quotes, a newline, accents and an emoji as \u pairs) across the slices' edges.
HTML = '<p class="note">Café \U0001f600\n</p>' * (LONG_STRING // 20)
BACKENDS = {
    "SENDGRID": ("providers.anymail_json.SendGridBackend", "api_key"),
    "RESEND": ("providers.anymail_json.ResendBackend", "api_key"),
    "POSTMARK": ("providers.anymail_json.PostmarkBackend", "server_token"),
}


def message(connection: Any) -> EmailMultiAlternatives:
    sent = EmailMultiAlternatives("Report", "See attached", "jobs@em.example.com", ["user@example.com"])
    sent.attach_alternative(HTML, "text/html")
    sent.attach("report.pdf", FILE, "application/pdf")
    sent.attach("small.pdf", b"%PDF", "application/pdf")
    sent.connection = connection
    sent.metadata = {"job_id": "abc"}  # type: ignore[attr-defined]
    return sent


def resend_payloads() -> tuple[Any, Any]:
    """A message's payload from Resend's backend here and from anymail's own."""
    connection = get_connection("providers.anymail_json.ResendBackend", api_key=KEY, api_url="https://x.invalid/")
    built = message(connection)
    ours = connection.build_message_payload(built, connection.send_defaults)
    return ours, resend.ResendPayload(built, connection.send_defaults, connection)


def test_a_payload_with_long_strings_is_sent_as_the_bytes_anymail_writes() -> None:
    ours, stock = resend_payloads()

    body = ours.serialize_data()

    assert isinstance(body, StreamedJsonBody)
    expected = stock.serialize_data().encode()
    assert b"".join(body) == expected
    assert b"".join(body) == expected  # again, whole, for a request sent again
    assert len(body) == len(expected)


def test_a_payload_without_long_strings_is_serialized_as_anymail_does() -> None:
    connection = get_connection("providers.anymail_json.ResendBackend", api_key=KEY, api_url="https://x.invalid/")
    built = EmailMultiAlternatives("Hello", "Hi", "jobs@em.example.com", ["user@example.com"], connection=connection)

    ours = connection.build_message_payload(built, connection.send_defaults).serialize_data()

    assert ours == resend.ResendPayload(built, connection.send_defaults, connection).serialize_data()


@pytest.mark.parametrize("provider", [FakeSendGrid, FakeResend, FakePostmark], ids=["sendgrid", "resend", "postmark"])
def test_each_provider_receives_the_long_strings_whole(provider: type[FakeProvider]) -> None:
    with provider() as fake:
        fake.accept_key(KEY)
        backend, credential = BACKENDS[fake.name]
        message(get_connection(backend, api_url=fake.url, timeout=5, **{credential: KEY})).send()

    [call] = fake.sent
    attachments = call.json.get("attachments") or call.json["Attachments"]
    contents = [attachment.get("content") or attachment["Content"] for attachment in attachments]
    assert contents == [base64.b64encode(FILE).decode(), base64.b64encode(b"%PDF").decode()]
    html = call.json.get("html") or call.json.get("HtmlBody") or call.json["content"][-1]["value"]
    assert html == HTML


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_attachments_base64_is_made_as_the_body_is_sent_never_held_whole(backend: str) -> None:
    path, credential = BACKENDS[backend]
    connection = get_connection(path, api_url="https://x.invalid/", **{credential: KEY})
    built = message(connection)
    built.attach("large.bin", os.urandom(4 * 1024 * 1024), "application/octet-stream")

    tracemalloc.start()
    try:
        body = connection.build_message_payload(built, connection.send_defaults).serialize_data()
        sent = sum(len(chunk) for chunk in body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # anymail's own payload holds the large file's base64 whole (5.3 MiB), then its escaped copy and the document.
    assert sent > 4 * 1024 * 1024 * 4 // 3
    assert peak < 1024 * 1024
