"""A job's attachments in a real browser: listed on its page at a desktop's and a phone's width, downloaded whole."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from notifications.models import Attachment, Job, JobStatus, JobType
from tests.browser.pages import PHONE_WIDTH, expect_no_sideways_scrolling, expect_table_layout
from tests.factories import JobFactory

pytestmark = pytest.mark.browser

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 16
# As long as a filename may be, with nowhere to break but anywhere.
LONG_NAME = "quarterly-statement-" * 12 + "final.pdf"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>document.title="ran"</script></svg>'


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    account, _api_key = account_create(email="grace@example.com", plan=Plan.FREE, password="plum-orchard-lantern-42")
    sign_in_as(account.user)
    return account


def job_with(account: Account, *files: tuple[str, bytes, str]) -> Job:
    """An email job of ``account`` with ``files`` (name, content, type), stored as a send stores them."""
    entries = [
        {"filename": name, "contentType": kind, "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
        for name, content, kind in files
    ]
    payload = {"to": "ada@example.com", "subject": "Your statement", "body": "<p>Attached</p>", "attachments": entries}
    job = JobFactory(account=account, type=JobType.EMAIL, status=JobStatus.COMPLETED, attempts=1, payload=payload)
    for position, ((name, content, kind), entry) in enumerate(zip(files, entries, strict=True)):
        Attachment.objects.create(
            job=job,
            position=position,
            filename=name,
            content_type=kind,
            size=entry["size"],
            sha256=entry["sha256"],
            content=content,
        )
    return job


@pytest.mark.parametrize("width", [1280, PHONE_WIDTH])
def test_the_job_page_lists_the_attachments_and_downloads_each_whole(
    page: Page, holder: Account, tmp_path: Path, width: int
) -> None:
    job = job_with(holder, (LONG_NAME, PDF, "application/pdf"), ("chart.svg", SVG, "image/svg+xml"))
    page.set_viewport_size({"width": width, "height": 900})

    page.goto(f"/dashboard/jobs/{job.id}/")

    section = page.locator("section").filter(has=page.get_by_role("heading", name="Attachments"))
    table = section.get_by_role("table")
    expect_table_layout(table, stacked=width == PHONE_WIDTH)
    expect(table.get_by_role("row").filter(has=page.get_by_role("cell"))).to_have_count(2)
    expect(section).to_contain_text(hashlib.sha256(PDF).hexdigest())
    expect_no_sideways_scrolling(page, width)

    with page.expect_download() as pdf:
        section.get_by_role("link", name=LONG_NAME).click()
    assert pdf.value.suggested_filename == LONG_NAME
    assert Path(pdf.value.path()).read_bytes() == PDF

    # An SVG is the client's file on NotifyHub's origin: downloaded, never rendered, its script never run.
    with page.expect_download() as svg:
        section.get_by_role("link", name="chart.svg").click()
    assert Path(svg.value.path()).read_bytes() == SVG
    expect(page).to_have_title(f"Job {job.id} · NotifyHub")
