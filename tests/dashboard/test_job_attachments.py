"""A job's attachments on its dashboard page, and their download, the holder's alone."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account
from notifications.models import Attachment, Job
from notifications.selectors import CONTENT_SLICE_BYTES
from tests.conftest import Client, ready_to_send
from tests.dashboard.pages import page_html, page_text

Holder = tuple[Any, Account]

PDF = b"%PDF-1.7\n" + bytes(range(256))
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def sent_with(client: Client, *attachments: dict[str, Any]) -> str:
    response = client.send_email(attachments=list(attachments))
    assert response.status_code == 202, response.json()
    return str(response.json()["data"]["jobId"])


def file(filename: str, content: bytes, **fields: str) -> dict[str, Any]:
    return {"filename": filename, "content": base64.b64encode(content).decode(), **fields}


@pytest.fixture
def job_id(holder: Holder, startup: Client) -> str:
    ready_to_send(startup)
    return sent_with(startup, file("invoice 11.pdf", PDF), file("logo.png", b"\x89PNG", contentId="logo@acme"))


def test_the_job_page_lists_the_attachments_without_reading_their_content(holder: Holder, job_id: str) -> None:
    browser, _ = holder

    with CaptureQueriesContext(connection) as queries:
        page = browser.get(f"/dashboard/jobs/{job_id}/")

    assert page.status_code == 200
    text = page_text(page)
    assert "Attachments File Type Size SHA-256 invoice 11.pdf application/pdf 265" in text
    assert "logo.png inline, cid:logo@acme image/png 4" in text
    html = page_html(page)
    assert f'href="/dashboard/jobs/{job_id}/attachments/0/" download>invoice 11.pdf</a>' in html
    assert f'href="/dashboard/jobs/{job_id}/attachments/1/" download>logo.png</a>' in html
    assert not [query["sql"] for query in queries if Attachment._meta.db_table in query["sql"]]


def test_the_holder_downloads_an_attachment_as_it_was_sent(holder: Holder, job_id: str) -> None:
    browser, _ = holder

    response = browser.get(f"/dashboard/jobs/{job_id}/attachments/0/")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PDF
    assert response["Content-Length"] == str(len(PDF))
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="invoice 11.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Cache-Control"] == "private, no-store"


def test_a_large_file_is_streamed_from_the_database_a_slice_at_a_time(holder: Holder, startup: Client) -> None:
    browser, _ = holder
    ready_to_send(startup)
    large = os.urandom(2 * CONTENT_SLICE_BYTES + 7)
    job_id = sent_with(startup, file("scan.pdf", large))

    with CaptureQueriesContext(connection) as queries:
        response = browser.get(f"/dashboard/jobs/{job_id}/attachments/0/")
        content = b"".join(response.streaming_content)

    assert (content == large, response["Content-Length"]) == (True, str(len(large)))
    slices = [query["sql"] for query in queries if "substr(" in query["sql"]]
    assert len(slices) == 3
    # The attachment's own row is read without its content.
    assert not [sql for sql in queries if '"content"' in sql["sql"] and "substr(" not in sql["sql"]]


@pytest.mark.parametrize(
    ("sent_type", "served_type"),
    [
        ("image/svg+xml", "application/octet-stream"),
        ("text/html", "application/octet-stream"),
        ("application/xhtml+xml", "application/octet-stream"),
        ("text/javascript", "application/octet-stream"),
        ("multipart/related", "application/octet-stream"),
        ("text/plain", "text/plain"),
        ("image/png", "image/png"),
    ],
)
def test_a_type_a_browser_could_render_is_served_as_bytes(
    holder: Holder, startup: Client, sent_type: str, served_type: str
) -> None:
    browser, _ = holder
    ready_to_send(startup)
    job_id = sent_with(startup, file("picture.svg", SVG, contentType=sent_type))

    response = browser.get(f"/dashboard/jobs/{job_id}/attachments/0/")

    assert (response.status_code, response["Content-Type"], b"".join(response.streaming_content)) == (
        200,
        served_type,
        SVG,
    )
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_non_ascii_filename_is_given_in_rfc_5987_form(holder: Holder, startup: Client) -> None:
    browser, _ = holder
    ready_to_send(startup)
    job_id = sent_with(startup, file("facture-été.pdf", PDF))

    response = browser.get(f"/dashboard/jobs/{job_id}/attachments/0/")

    assert response["Content-Disposition"] == "attachment; filename*=utf-8''facture-%C3%A9t%C3%A9.pdf"


def test_another_accounts_attachment_and_a_missing_one_are_404(holder: Holder, job_id: str, free: Client) -> None:
    browser, _ = holder
    theirs = sent_with(free, file("theirs.pdf", PDF))

    assert browser.get(f"/dashboard/jobs/{theirs}/attachments/0/").status_code == 404
    assert browser.get(f"/dashboard/jobs/{job_id}/attachments/2/").status_code == 404
    assert browser.get(f"/dashboard/jobs/{job_id}/attachments/-1/").status_code == 404


def test_a_test_jobs_attachment_is_not_on_the_dashboard(holder: Holder, startup: Client) -> None:
    browser, _ = holder
    ready_to_send(startup)
    job_id = sent_with(startup, file("invoice.pdf", PDF))
    # The dashboard shows live jobs only, as a test key's jobs are only the test keys' (docs/rules.md, "Test mode").
    Job.objects.filter(id=job_id).update(test=True)

    assert browser.get(f"/dashboard/jobs/{job_id}/attachments/0/").status_code == 404


def test_signed_out_the_download_asks_to_sign_in(browser: Any, startup: Client) -> None:
    ready_to_send(startup)
    job_id = sent_with(startup, file("invoice.pdf", PDF))

    response = browser.get(f"/dashboard/jobs/{job_id}/attachments/0/")

    assert response.status_code == 302
    assert response["Location"] == f"/login/?next=/dashboard/jobs/{job_id}/attachments/0/"
