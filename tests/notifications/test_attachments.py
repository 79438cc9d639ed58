"""Attachments on an email send and in batch items: what is refused, what is stored where, what reads leave alone."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from notifications.attachments import ATTACHMENTS_SCHEMA, FILENAME_PATTERN, job_attachments
from notifications.models import Attachment, Job, JobStatus
from notifications.selectors import CONTENT_SLICE_BYTES
from tests.api.test_envelope import assert_error
from tests.conftest import EMAIL, Client

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 4
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
MIB = 1024 * 1024


def encoded(content: bytes) -> str:
    return base64.b64encode(content).decode()


def invoice(**overrides: Any) -> dict[str, Any]:
    return {"filename": "invoice.pdf", "content": encoded(PDF), **overrides}


@pytest.mark.parametrize(
    ("attachments", "message"),
    [
        ("invoice.pdf", "attachments must be a list of at most 10 attachments"),
        ([invoice()] * 11, "attachments must be a list of at most 10 attachments"),
        ([invoice(), "invoice.pdf"], "attachments[1] must be an object"),
        ([invoice(), invoice(x=1)], "attachments[1] has an unknown field: x"),
        ([{"content": encoded(PDF)}], "attachments[0].filename is required"),
        ([invoice(filename="")], "attachments[0].filename must be 1 to 255 characters"),
        ([invoice(filename="a" * 252 + ".pdf")], "attachments[0].filename must be 1 to 255 characters"),
        (
            [invoice(filename="../etc/passwd")],
            "attachments[0].filename must be a file name, without /, \\ or control characters",
        ),
        (
            [invoice(filename="C:\\invoice.pdf")],
            "attachments[0].filename must be a file name, without /, \\ or control characters",
        ),
        (
            [invoice(filename="invoice\r\n.pdf")],
            "attachments[0].filename must be a file name, without /, \\ or control characters",
        ),
        ([invoice(filename=". .")], "attachments[0].filename must be a file name, without /, \\ or control characters"),
        ([invoice(filename="setup.EXE")], "attachments[0].filename may not be an executable file"),
        ([invoice(filename="invoice.pdf.js. ")], "attachments[0].filename may not be an executable file"),
        ([invoice(), invoice(content="not base64!")], "attachments[1].content must be base64"),
        ([invoice(content="QUJD\nREVG")], "attachments[0].content must be base64"),
        ([invoice(content="QUJ")], "attachments[0].content must be base64"),
        ([invoice(content="QUJD=")], "attachments[0].content must be base64"),
        ([invoice(content="QUJD====")], "attachments[0].content must be base64"),
        ([invoice(content="QUJDRA===")], "attachments[0].content must be base64"),
        ([invoice(content="QQ==QUJD")], "attachments[0].content must be base64"),
        ([invoice(content="QUJD-_==")], "attachments[0].content must be base64"),
        ([invoice(content="QUJD\u00e9")], "attachments[0].content must be base64"),
        ([invoice(content="")], "attachments[0].content must be base64"),
        ([invoice(content=123)], "attachments[0].content must be base64"),
        ([invoice(contentType="pdf")], "attachments[0].contentType must be a media type such as application/pdf"),
        ([invoice(contentType=None)], "attachments[0].contentType must be a media type such as application/pdf"),
        ([invoice(filename=None)], "attachments[0].filename must be 1 to 255 characters"),
        (
            [invoice(contentType="text/html; charset=utf-8")],
            "attachments[0].contentType must be a media type such as application/pdf",
        ),
        (
            [invoice(contentId="<logo>")],
            "attachments[0].contentId must be 1 to 255 printable ASCII characters without <, > or spaces",
        ),
        (
            [invoice(contentId="my logo")],
            "attachments[0].contentId must be 1 to 255 printable ASCII characters without <, > or spaces",
        ),
    ],
)
def test_a_malformed_attachment_is_refused_naming_the_item(free: Client, attachments: Any, message: str) -> None:
    assert_error(free.send_email(attachments=attachments), 400, message, "validation_failed")
    assert not Job.objects.exists()
    assert not Attachment.objects.exists()


def test_attachments_past_10_mib_decoded_in_all_are_refused(free: Client) -> None:
    half = 5 * MIB
    attachments = [invoice(content=encoded(b"a" * half)), invoice(content=encoded(b"b" * (half + 1)))]

    assert_error(free.send_email(attachments=attachments), 400, "attachments may total at most 10 MB")
    assert not Job.objects.exists()


def test_attachments_of_10_mib_exactly_are_stored(free: Client) -> None:
    content = bytes(range(256)) * (10 * MIB // 256)

    response = free.send_email(attachments=[invoice(filename="archive.zip", content=encoded(content))])

    assert response.status_code == 202, response.json()
    row = Attachment.objects.get()
    assert (row.size, bytes(row.content) == content, row.content_type) == (10 * MIB, True, "application/zip")


def test_the_payload_keeps_each_attachments_metadata_and_its_own_table_the_bytes(free: Client) -> None:
    logo = {"filename": "logo.png", "content": encoded(PNG), "contentId": "logo@acme"}
    data = {"filename": "data.bin", "content": encoded(b"\x00\x01"), "contentType": "application/x-acme"}

    response = free.send_email(body='<img src="cid:logo@acme">', attachments=[invoice(), logo, data])

    assert response.status_code == 202, response.json()
    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert job.payload["attachments"] == [
        {"filename": "invoice.pdf", "contentType": "application/pdf", "size": len(PDF), "sha256": sha256(PDF)},
        {
            "filename": "logo.png",
            "contentType": "image/png",
            "contentId": "logo@acme",
            "size": len(PNG),
            "sha256": sha256(PNG),
        },
        {"filename": "data.bin", "contentType": "application/x-acme", "size": 2, "sha256": sha256(b"\x00\x01")},
    ]
    rows = list(job.attachments.order_by("position"))
    assert [(row.position, row.filename, row.content_type, row.content_id) for row in rows] == [
        (0, "invoice.pdf", "application/pdf", None),
        (1, "logo.png", "image/png", "logo@acme"),
        (2, "data.bin", "application/x-acme", None),
    ]
    assert [(bytes(row.content), row.size, row.sha256) for row in rows] == [
        (PDF, len(PDF), sha256(PDF)),
        (PNG, len(PNG), sha256(PNG)),
        (b"\x00\x01", 2, sha256(b"\x00\x01")),
    ]


def test_a_delivery_reads_each_file_whole_in_slices_of_a_mib(free: Client) -> None:
    large = os.urandom(2 * CONTENT_SLICE_BYTES + 7)
    files = [invoice(filename="scan.pdf", content=encoded(large)), invoice(filename="note.txt", content=encoded(b"x"))]
    response = free.send_email(attachments=[*files, invoice()])
    job = Job.objects.get(id=response.json()["data"]["jobId"])

    with CaptureQueriesContext(connection) as queries:
        attachments = job_attachments(job)

    assert [(a.filename, a.content) for a in attachments] == [
        ("scan.pdf", large),
        ("note.txt", b"x"),
        ("invoice.pdf", PDF),
    ]
    # The files' list, then three slices of the large file and one of each small one: none of a statement's
    # results holds more than a slice.
    assert len(queries) == 1 + 3 + 1 + 1


def test_a_job_without_attachments_has_no_key_and_no_rows(free: Client) -> None:
    response = free.send_email()

    assert Job.objects.get(id=response.json()["data"]["jobId"]).payload == EMAIL
    assert not Attachment.objects.exists()


def test_an_email_to_a_suppressed_address_keeps_its_attachments(free: Client) -> None:
    free.post("/api/v1/suppressions", {"email": "user@example.com"})

    response = free.send_email(attachments=[invoice()])

    job = Job.objects.get(id=response.json()["data"]["jobId"])
    assert job.status == JobStatus.FAILED
    assert bytes(job.attachments.get().content) == PDF


def test_a_refused_duplicate_stores_no_second_set_of_attachments(free: Client) -> None:
    free.send_email(idempotencyKey="inv-1", attachments=[invoice()])

    response = free.send_email(idempotencyKey="inv-1", attachments=[invoice()])

    assert response.status_code == 409
    assert Attachment.objects.count() == 1


def test_batch_items_carry_their_own_attachments(free: Client) -> None:
    items = [{**EMAIL, "attachments": [invoice()]}, EMAIL, {**EMAIL, "attachments": [invoice(filename="x.exe")]}]

    response = free.post("/api/v1/notifications/email/batch", {"items": items})

    assert response.status_code == 202, response.json()
    answers = response.json()["data"]["items"]
    assert answers[2] == {
        "status": 400,
        "error": "attachments[0].filename may not be an executable file",
        "code": "validation_failed",
    }
    with_file, without = (Job.objects.get(id=answer["jobId"]) for answer in answers[:2])
    assert bytes(with_file.attachments.get().content) == PDF
    assert "attachments" not in without.payload
    assert Attachment.objects.count() == 1


def test_an_email_body_may_hold_15_mib(free: Client, settings: Any) -> None:
    assert settings.API_MAX_EMAIL_BODY_BYTES == 15 * MIB
    body = _body_of_length(15 * MIB)

    response = free.http.post(
        "/api/v1/notifications/email", body, content_type="application/json", HTTP_X_API_KEY=free.api_key
    )

    # Read and parsed whole: its fields are then judged (an attachment of 11 MiB).
    assert_error(response, 400, "attachments may total at most 10 MB")


def test_an_email_body_past_15_mib_is_a_413_before_it_is_parsed(free: Client) -> None:
    response = free.http.post(
        "/api/v1/notifications/email",
        _body_of_length(15 * MIB + 1),
        content_type="application/json",
        HTTP_X_API_KEY=free.api_key,
    )

    assert_error(response, 413, "Request body must be at most 15360 KB", "payload_too_large")
    assert not Job.objects.exists()


def test_the_webhook_send_keeps_its_own_body_limit(free: Client) -> None:
    huge = '{"url": "https://a.example.com", "payload": {"x": "' + "a" * (600 * 1024) + '"}}'

    response = free.http.post(
        "/api/v1/notifications/webhook", huge, content_type="application/json", HTTP_X_API_KEY=free.api_key
    )

    assert_error(response, 413, "Request body must be at most 512 KB")


def test_reading_and_listing_jobs_never_loads_attachments(free: Client) -> None:
    job_id = free.send_email(attachments=[invoice()]).json()["data"]["jobId"]

    with CaptureQueriesContext(connection) as queries:
        status = free.get(f"/api/v1/notifications/jobs/{job_id}")
        listed = free.get("/api/v1/notifications/jobs")

    assert status.json()["data"]["payload"]["attachments"] == [
        {"filename": "invoice.pdf", "contentType": "application/pdf", "size": len(PDF), "sha256": sha256(PDF)}
    ]
    assert [job["id"] for job in listed.json()["data"]["data"]] == [job_id]
    assert not [query["sql"] for query in queries if Attachment._meta.db_table in query["sql"]]


def test_the_documented_filename_pattern_refuses_what_the_field_does() -> None:
    pattern = re.compile(FILENAME_PATTERN)
    assert ATTACHMENTS_SCHEMA["items"]["properties"]["filename"]["pattern"] == FILENAME_PATTERN
    for taken in ["invoice.pdf", "Report 2026.xlsx", "exe", "notes.jsx", "über.txt"]:
        assert pattern.search(taken), taken
    for refused in ["a/b.pdf", "a\\b.pdf", "a\x00.pdf", "SETUP.ExE", "x.js. ", "..", "tab\t.txt"]:
        assert not pattern.search(refused), refused


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _body_of_length(length: int) -> bytes:
    """An email send's JSON body of exactly ``length`` bytes: one attachment's base64 fills it."""
    head = b'{"to": "user@example.com", "subject": "Hi", "body": "<p>Hi</p>", "attachments": [{"filename": "a.bin", '
    head += b'"content": "'
    tail = b'"}]}'
    return head + b"A" * (length - len(head) - len(tail)) + tail
