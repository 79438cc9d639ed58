"""Attachments delivered: through each provider's fake, which checks them as its API does, and the local backend."""

from __future__ import annotations

import base64
import email
import email.policy
from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from notifications.models import JobStatus
from tests.conftest import Client, ready_to_send, wait_for_job
from tests.fakes.providers import POSTMARK_TOO_LARGE, FakePostmark, FakeResend, FakeSendGrid
from tests.notifications.test_test_mode import with_test_key

pytestmark = pytest.mark.usefixtures("worker")

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
# Latin-1, not UTF-8: Django and anymail hand a text file on as UTF-8, so this one goes as bytes, its bytes as they are.
CSV = "café;1,50\n".encode("latin-1")
NOTES = "Paid with thanks — Acme\n".encode()
ATTACHMENTS = [
    {"filename": "invoice.pdf", "content": base64.b64encode(PDF).decode()},
    {"filename": "logo.png", "content": base64.b64encode(PNG).decode(), "contentId": "logo@acme"},
    {"filename": "prices.csv", "content": base64.b64encode(CSV).decode(), "contentType": "text/csv"},
    {"filename": "notes.txt", "content": base64.b64encode(NOTES).decode()},
]
TEXT_UTF8 = 'text/plain; charset="utf-8"'
BODY = '<p>Your invoice</p><img src="cid:logo@acme">'


def send(client: Client, **fields: Any) -> str:
    response = client.send_email(**{"body": BODY, "attachments": ATTACHMENTS, **fields})
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["jobId"])


def decoded(content: str) -> bytes:
    return base64.b64decode(content, validate=True)


def test_postmark_receives_each_attachment_with_the_inline_ones_content_id(
    startup: Client, postmark: FakePostmark
) -> None:
    ready_to_send(startup, "POSTMARK")

    job = wait_for_job(send(startup))

    assert job.status == JobStatus.COMPLETED
    (call,) = postmark.sent
    sent = [(a["Name"], decoded(a["Content"]), a["ContentType"], a.get("ContentID")) for a in call.json["Attachments"]]
    assert sent == [
        ("invoice.pdf", PDF, "application/pdf", None),
        ("logo.png", PNG, "image/png", "cid:logo@acme"),
        ("prices.csv", CSV, "application/octet-stream", None),
        ("notes.txt", NOTES, TEXT_UTF8, None),
    ]


def test_sendgrid_receives_each_attachment_inline_ones_by_content_id(startup: Client, sendgrid: FakeSendGrid) -> None:
    ready_to_send(startup, "SENDGRID")

    job = wait_for_job(send(startup))

    assert job.status == JobStatus.COMPLETED
    (call,) = sendgrid.sent
    sent = [
        (a["filename"], decoded(a["content"]), a["type"], a.get("disposition"), a.get("content_id"))
        for a in call.json["attachments"]
    ]
    assert sent == [
        ("invoice.pdf", PDF, "application/pdf", None, None),
        ("logo.png", PNG, "image/png", "inline", "logo@acme"),
        ("prices.csv", CSV, "application/octet-stream", None, None),
        ("notes.txt", NOTES, TEXT_UTF8, None, None),
    ]


def test_resend_receives_each_attachment_under_the_type_its_name_gives(startup: Client, resend: FakeResend) -> None:
    ready_to_send(startup, "RESEND")
    # Resend reads a type from the name: a PDF sent as bytes goes as application/pdf, or Resend would hold it.
    pdf_as_bytes = {**ATTACHMENTS[0], "contentType": "application/octet-stream"}

    job = wait_for_job(send(startup, attachments=[pdf_as_bytes, ATTACHMENTS[1], ATTACHMENTS[3]]))

    assert job.status == JobStatus.COMPLETED
    (call,) = resend.sent
    sent = [
        (a["filename"], decoded(a["content"]), a["content_type"], a.get("content_id")) for a in call.json["attachments"]
    ]
    assert sent == [
        ("invoice.pdf", PDF, "application/pdf", None),
        ("logo.png", PNG, "image/png", "logo@acme"),
        ("notes.txt", NOTES, TEXT_UTF8, None),
    ]


def test_a_file_resend_cannot_carry_fails_over_to_the_next_provider(
    startup: Client, resend: FakeResend, sendgrid: FakeSendGrid
) -> None:
    ready_to_send(startup, "RESEND", "SENDGRID")

    job = wait_for_job(send(startup, attachments=[ATTACHMENTS[2]]))

    # A text file that is not UTF-8 goes as bytes, which its .csv name contradicts at Resend: anymail refuses it there.
    assert job.status == JobStatus.COMPLETED
    assert resend.calls == []
    (call,) = sendgrid.sent
    assert [(a["filename"], decoded(a["content"])) for a in call.json["attachments"]] == [("prices.csv", CSV)]


def test_a_provider_refusing_the_attachments_fails_the_attempt_with_its_message(
    startup: Client, postmark: FakePostmark
) -> None:
    ready_to_send(startup, "POSTMARK")
    # 8 MB of file is 10.7 MB in base64: within NotifyHub's 10 MiB, past Postmark's 10 MB a message.
    big = {"filename": "scan.pdf", "content": base64.b64encode(b"%PDF" * 2_000_000).decode()}

    response = startup.send_email(attachments=[big])
    job = wait_for_job(response.json()["data"]["jobId"])

    # Each attempt fails with Postmark's own words; a paid account's attempts are retried as for any refusal.
    message = f"POSTMARK: 422 {POSTMARK_TOO_LARGE}"
    assert (job.status, job.error_message) == (JobStatus.FAILED, message)
    logs = job.delivery_logs.order_by("attempt")
    assert [(log.status, log.error_message) for log in logs] == [("failed", message)] * job.attempts
    assert postmark.sent == []
    assert len(postmark.calls) == job.attempts


def test_the_local_backend_writes_the_attachments_into_the_message(free: Client, settings: Any, tmp_path: Path) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)

    job = wait_for_job(send(free))

    assert job.status == JobStatus.COMPLETED
    (written,) = tmp_path.iterdir()
    message = email.message_from_bytes(written.read_bytes(), policy=email.policy.default)
    parts = [
        (
            part.get_filename(),
            part.get_payload(decode=True),
            part.get_content_type(),
            part.get_content_disposition(),
            part["Content-ID"],
        )
        for part in message.iter_attachments()
    ]
    assert parts == [
        ("invoice.pdf", PDF, "application/pdf", "attachment", None),
        ("logo.png", PNG, "image/png", "inline", "<logo@acme>"),
        ("prices.csv", CSV, "application/octet-stream", "attachment", None),
        ("notes.txt", NOTES, "text/plain", "attachment", None),
    ]
    assert mail.outbox == []


def test_a_test_keys_attachments_are_checked_and_kept_and_never_sent(startup: Client, sendgrid: FakeSendGrid) -> None:
    ready_to_send(startup, "SENDGRID")
    tester = with_test_key(startup)

    refused = tester.send_email(attachments=[{"filename": "setup.exe", "content": "TVo="}])
    job = wait_for_job(send(tester))

    assert refused.json()["error"] == "attachments[0].filename may not be an executable file"
    assert (job.test, job.status) == (True, JobStatus.COMPLETED)
    assert [row.filename for row in job.attachments.order_by("position")] == [a["filename"] for a in ATTACHMENTS]
    assert sendgrid.calls == []
