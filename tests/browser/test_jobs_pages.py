"""The holder's jobs in a real browser: the list's filters and pages, a job's page, Retry, Cancel, and the home page."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import Locator, Page, expect

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create
from notifications.models import DailyTally, DeliveryStatus, Job, JobStatus, JobType
from notifications.services import CANCELLED_MESSAGE
from tests.browser.pages import (
    PHONE_WIDTH,
    expect_no_sideways_scrolling,
    expect_table_layout,
    expect_whole_on_screen,
)
from tests.browser.walk import expect_filters, filter_jobs, job_field, listed_jobs, open_job, retry_job
from tests.factories import DeliveryLogFactory, FailedJobFactory, JobFactory

pytestmark = pytest.mark.browser

PER_PAGE = 25  # dashboard.views.jobs.JOBS_PER_PAGE, as the holder counts the rows
# A provider's refusal as long as they come, and its answer with no space to break at.
LONG_ERROR = "SendGrid answered 550: The email account that you tried to reach does not exist; check the address"
LONG_ANSWER = '{"errors":[{"message":"' + "mailbox_unavailable_" * 6 + '","field":"personalizations.0.to"}]}'


@pytest.fixture
def holder(sign_in_as: Callable[[Any], None]) -> Account:
    """A signed-in holder with no jobs yet."""
    account, _api_key = account_create(email="grace@example.com", plan=Plan.FREE, password="plum-orchard-lantern-42")
    sign_in_as(account.user)
    return account


@pytest.fixture
def stranger() -> Account:
    """Another account, with a failed email job of its own: it must never show on the holder's pages."""
    account, _api_key = account_create(email="mallory@example.com", plan=Plan.FREE)
    FailedJobFactory(account=account, type=JobType.EMAIL, payload={"to": "x@example.com", "subject": "Not yours"})
    return account


def newest_first(jobs: list[Job]) -> list[str]:
    return [str(job.id) for job in sorted(jobs, key=lambda job: (job.created_at, job.id), reverse=True)]


def query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query, keep_blank_values=True)


def attempts_table(page: Page) -> Locator:
    """The data rows of the job page's delivery attempts."""
    section = page.locator("section").filter(has=page.get_by_role("heading", name="Delivery attempts"))
    return section.get_by_role("row").filter(has=page.get_by_role("cell"))


def test_the_type_and_status_filters_show_exactly_the_matching_jobs(
    page: Page, holder: Account, stranger: Account
) -> None:
    failed_emails = FailedJobFactory.create_batch(2, account=holder, type=JobType.EMAIL)
    others = [
        JobFactory(account=holder, type=JobType.EMAIL, status=JobStatus.COMPLETED, attempts=1),
        JobFactory(account=holder, type=JobType.EMAIL, status=JobStatus.PENDING),
        *FailedJobFactory.create_batch(2, account=holder, type=JobType.WEBHOOK),
        JobFactory(account=holder, type=JobType.WEBHOOK, status=JobStatus.COMPLETED, attempts=1),
        JobFactory(account=holder, type=JobType.WEBHOOK, status=JobStatus.PROCESSING, attempts=1),
    ]

    filter_jobs(page, type="Email", status="Failed")

    expect(listed_jobs(page)).to_have_text(newest_first(failed_emails))
    assert query(page) == {"type": ["email"], "status": ["failed"], "to": [""], "tag": [""]}
    expect_filters(page, type="email", status="failed")

    page.get_by_role("link", name="Show all jobs").click()

    expect(listed_jobs(page)).to_have_text(newest_first(failed_emails + others))
    expect_filters(page, type="", status="")
    expect(page.get_by_role("link", name="Show all jobs")).to_have_count(0)


def test_older_and_newer_page_through_the_filtered_jobs(page: Page, holder: Account) -> None:
    failed_webhooks = FailedJobFactory.create_batch(PER_PAGE + 3, account=holder, type=JobType.WEBHOOK)
    # Newer than every failed webhook: a page that lost the filters would start with these.
    JobFactory.create_batch(2, account=holder, type=JobType.WEBHOOK, status=JobStatus.COMPLETED)
    FailedJobFactory(account=holder, type=JobType.EMAIL)
    expected = newest_first(failed_webhooks)

    filter_jobs(page, type="Webhook", status="Failed")
    expect(listed_jobs(page)).to_have_text(expected[:PER_PAGE])
    expect(page.get_by_role("link", name="← Newer")).to_have_count(0)

    page.get_by_role("link", name="Older →").click()
    expect(listed_jobs(page)).to_have_text(expected[PER_PAGE:])
    assert query(page) == {"type": ["webhook"], "status": ["failed"], "to": [""], "tag": [""], "page": ["2"]}
    expect_filters(page, type="webhook", status="failed")
    expect(page.get_by_role("link", name="Older →")).to_have_count(0)

    page.get_by_role("link", name="← Newer").click()
    expect(listed_jobs(page)).to_have_text(expected[:PER_PAGE])
    assert query(page) == {"type": ["webhook"], "status": ["failed"], "to": [""], "tag": [""], "page": ["1"]}
    expect_filters(page, type="webhook", status="failed")


def test_a_jobs_page_shows_its_payload_attempts_and_next_attempt(page: Page, holder: Account) -> None:
    next_attempt = datetime(2031, 5, 4, 10, 30, 15, tzinfo=UTC)
    job = JobFactory(
        account=holder,
        type=JobType.EMAIL,
        status=JobStatus.PROCESSING,
        attempts=1,
        next_attempt_at=next_attempt,
        payload={"to": "ada@example.com", "subject": "Your receipt", "body": "<p>Thanks!</p>"},
    )
    DeliveryLogFactory(
        job=job,
        attempt=1,
        used_provider="SENDGRID",
        response_status=503,
        duration_ms=1234,
        error_message="SendGrid answered 503: Service Unavailable",
        created_at=datetime(2031, 5, 4, 10, 29, 45, tzinfo=UTC),
    )

    open_job(page, str(job.id))

    expect(page.get_by_role("heading", level=1)).to_have_text("Email job")
    expect(job_field(page, "Status")).to_have_text("processing waiting to retry")
    expect(job_field(page, "Attempts")).to_have_text("1 of 3")
    expect(job_field(page, "Next attempt")).to_have_text("2031-05-04 10:30:15 UTC")
    payload = page.locator("section").filter(has=page.get_by_role("heading", name="Payload")).locator("pre")
    expect(payload).to_contain_text('"subject": "Your receipt"')
    expect(payload).to_contain_text('"body": "<p>Thanks!</p>"')
    expect(attempts_table(page)).to_have_count(1)
    error = "SendGrid answered 503: Service Unavailable"
    expect(attempts_table(page).get_by_role("cell")).to_have_text(
        ["1", "2031-05-04 10:29:45", "failed", "SendGrid", "503", "1234 ms", error]
    )
    expect(page.get_by_role("heading", name="Provider events")).to_be_visible()
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)


def test_retry_requeues_a_failed_job(page: Page, holder: Account) -> None:
    job = FailedJobFactory(account=holder, type=JobType.WEBHOOK, completed_at=timezone.now())
    for attempt in range(1, job.attempts + 1):
        DeliveryLogFactory(job=job, attempt=attempt, status=DeliveryStatus.FAILED)
    open_job(page, str(job.id))
    expect(job_field(page, "Status")).to_have_text("failed")

    retry_job(page)

    expect(page).to_have_url(re.compile(rf"/dashboard/jobs/{job.id}/$"))
    expect(job_field(page, "Status")).to_have_text("pending")
    expect(job_field(page, "Attempts")).to_have_text("0 of 3 in round 2")
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect(attempts_table(page)).to_have_count(3)  # the logs stay
    expect(page.get_by_role("rowheader")).to_have_text(["Round 1", "Round 2, after a retry: no attempt yet"])
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error_message, job.completed_at) == (JobStatus.PENDING, 0, None, None)


@pytest.mark.parametrize("width", [1280, PHONE_WIDTH])
def test_cancel_stops_a_scheduled_job_which_can_then_be_retried(page: Page, holder: Account, width: int) -> None:
    send_at = datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC)
    job = JobFactory(
        account=holder, type=JobType.WEBHOOK, status=JobStatus.PENDING, scheduled_for=send_at, locked_until=send_at
    )
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/dashboard/jobs/")
    expect(page.locator("td", has_text="pending").first).to_contain_text("pending for Mar 4, 05:06")
    expect_no_sideways_scrolling(page, width)
    open_job(page, str(job.id))
    expect(job_field(page, "Status")).to_have_text("pending")
    expect(job_field(page, "Scheduled for")).to_have_text("2031-03-04 05:06:07 UTC")
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect_no_sideways_scrolling(page, width)

    page.get_by_role("button", name="Cancel job").click()

    expect(page.get_by_role("status")).to_have_text(CANCELLED_MESSAGE)
    expect(job_field(page, "Status")).to_have_text("failed")
    expect(job_field(page, "Last error")).to_have_text("Cancelled")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    expect(attempts_table(page)).to_have_count(0)  # no attempt was made
    expect_no_sideways_scrolling(page, width)
    retry_job(page)
    expect(job_field(page, "Status")).to_have_text("pending")
    job.refresh_from_db()
    assert (job.status, job.error_message) == (JobStatus.PENDING, None)


def test_another_accounts_job_is_not_found(page: Page, holder: Account, stranger: Account) -> None:
    theirs = Job.objects.get(account=stranger)

    response = page.goto(f"/dashboard/jobs/{theirs.id}/")

    assert response is not None
    assert response.status == 404
    expect(page.get_by_role("heading", name="Not Found")).to_be_visible()
    expect(page.get_by_text("Not yours")).to_have_count(0)


def test_the_home_page_charts_the_last_30_days_and_links_the_recent_jobs(page: Page, holder: Account) -> None:
    today = timezone.now().astimezone(UTC).date()
    DailyTally.objects.create(account=holder, day=today, completed=7, failed=3)
    DailyTally.objects.create(account=holder, day=today - timedelta(days=29), completed=2, failed=0)
    DailyTally.objects.create(account=holder, day=today - timedelta(days=30), completed=50, failed=50)  # too old
    jobs = JobFactory.create_batch(7, account=holder, status=JobStatus.COMPLETED, attempts=1)
    recent = newest_first(jobs)[:5]

    page.goto("/dashboard/")

    chart = page.get_by_role("img", name="Last 30 days: 9 completed, 3 failed", exact=True)
    expect(chart).to_be_visible()
    assert chart.evaluate("element => element.tagName") == "svg"
    expect(chart.locator("rect.completed")).to_have_count(2)
    expect(chart.locator("rect.failed")).to_have_count(1)
    expect(listed_jobs(page)).to_have_text(recent)

    open_job(page, recent[-1], listed_on="/dashboard/")


def test_sent_to_finds_every_email_to_an_address_or_every_webhook_to_a_host(page: Page, holder: Account) -> None:
    to_ada = [JobFactory(account=holder, type=JobType.EMAIL, payload={"to": to}) for to in ("ada@example.com",) * 2]
    JobFactory(account=holder, type=JobType.EMAIL, payload={"to": "grace@example.com"})
    to_hooks = JobFactory(account=holder, payload={"url": "https://hooks.example.com/in", "payload": {}})
    JobFactory(account=holder, payload={"url": "https://other.example.com/in", "payload": {}})

    for sent_to, expected in (("ADA@example.com", to_ada), ("hooks.example.com", [to_hooks])):
        page.goto("/dashboard/jobs/")
        page.get_by_label("Sent to (address or host)").fill(sent_to)
        page.get_by_role("button", name="Filter").click()

        expect(listed_jobs(page)).to_have_text(newest_first(expected))
        expect(page.get_by_role("table").locator("td.destination")).to_have_text([sent_to.lower()] * len(expected))
        expect(page.get_by_label("Sent to (address or host)")).to_have_value(sent_to)


@pytest.mark.parametrize("width", [1280, PHONE_WIDTH])
def test_an_emails_page_shows_its_recipients_reply_to_tags_metadata_and_skipped_recipients(
    page: Page, holder: Account, width: int
) -> None:
    long_value = "invoice-2031-05-" + "0123456789" * 8  # no space to break at
    job = JobFactory(
        account=holder,
        type=JobType.EMAIL,
        payload={
            "to": "ada@example.com",
            "subject": "Your invoice",
            "body": "<p>Attached</p>",
            "cc": ["grace@example.com", "gone@example.com"],
            "bcc": ["audit@example.com"],
            "replyTo": ["Acme Billing <billing@acme.com>", "support@acme.com"],
            "tags": ["invoice", "eu-west"],
            "metadata": {"order_id": "A-17", "note": "<b>paid</b>", "reference": long_value},
            "skippedRecipients": [{"email": "gone@example.com", "reason": "hard_bounce"}],
        },
    )
    other = JobFactory(account=holder, type=JobType.EMAIL, payload={"to": "bob@example.com", "tags": ["eu-west"]})
    JobFactory(account=holder, type=JobType.EMAIL, payload={"to": "eve@example.com", "tags": ["newsletter"]})
    page.set_viewport_size({"width": width, "height": 900})

    open_job(page, str(job.id))

    expect(job_field(page, "To")).to_have_text("ada@example.com")
    expect(job_field(page, "Cc")).to_have_text("grace@example.com, gone@example.com")
    expect(job_field(page, "Bcc")).to_have_text("audit@example.com")
    expect(job_field(page, "Reply-to")).to_have_text("Acme Billing <billing@acme.com>, support@acme.com")
    expect(job_field(page, "Tags").get_by_role("link")).to_have_text(["invoice", "eu-west"])
    message = page.locator("section").filter(has=page.get_by_role("heading", name="Message"))
    metadata, skipped = message.locator("table").all()
    expect_table_layout(metadata, stacked=width == PHONE_WIDTH)
    expect_table_layout(skipped, stacked=width == PHONE_WIDTH)
    expect(metadata.locator("tbody td")).to_have_text(
        ["order_id", "A-17", "note", "<b>paid</b>", "reference", long_value]
    )
    expect(metadata.locator("b")).to_have_count(0)  # shown as text, never as markup
    expect(skipped.locator("tbody td")).to_have_text(["gone@example.com", "hard_bounce"])
    for cell in message.locator("td").all():
        expect_whole_on_screen(cell, width)
    expect_no_sideways_scrolling(page, width)

    job_field(page, "Tags").get_by_role("link", name="eu-west").click()

    expect(listed_jobs(page)).to_have_text(newest_first([job, other]))
    expect(page.get_by_label("Tag", exact=True)).to_have_value("eu-west")
    expect_no_sideways_scrolling(page, width)


def test_the_tag_filter_finds_every_email_sent_with_the_tag_and_says_what_a_tag_may_be(
    page: Page, holder: Account
) -> None:
    receipts = [
        FailedJobFactory(account=holder, type=JobType.EMAIL, payload={"to": to, "tags": ["receipt"]})
        for to in ("ada@example.com", "grace@example.com")
    ]
    JobFactory(
        account=holder,
        type=JobType.EMAIL,
        status=JobStatus.COMPLETED,
        payload={"to": "a@example.com", "tags": ["receipt"]},
    )
    FailedJobFactory(account=holder, type=JobType.EMAIL, payload={"to": "b@example.com", "tags": ["Receipt"]})

    filter_jobs(page, type="Email", status="Failed", tag="receipt")

    expect(listed_jobs(page)).to_have_text(newest_first(receipts))
    assert query(page) == {"type": ["email"], "status": ["failed"], "to": [""], "tag": ["receipt"]}

    page.get_by_label("Tag", exact=True).fill("two words")
    page.get_by_role("button", name="Filter").click()

    expect(page.get_by_role("alert")).to_have_text("Enter a tag of 1 to 64 of A-Z, a-z, 0-9, _ and -.")
    expect(listed_jobs(page)).to_have_count(0)
    expect(page.get_by_label("Tag", exact=True)).to_have_value("two words")


@pytest.mark.parametrize("path", ["/dashboard/jobs/", "/dashboard/"])
def test_a_phone_shows_each_jobs_id_status_and_destination_without_scrolling_sideways(
    page: Page, holder: Account, path: str
) -> None:
    job = FailedJobFactory(
        account=holder,
        type=JobType.EMAIL,
        payload={"to": "a.very.long.recipient.address.for.a.phone@subdomain.example.com"},
        error_message="550 5.1.1 The email account that you tried to reach does not exist. " * 3,
    )
    page.set_viewport_size({"width": 390, "height": 844})

    page.goto(path)

    table = page.get_by_role("table")
    visible_headers = [header for header in table.locator("th").all() if header.is_visible()]
    assert [header.inner_text() for header in visible_headers] == ["Job", "Status", "Sent to"]
    row = table.locator("tbody tr").first
    expect(row.locator("td.id")).to_have_text(str(job.id)[:8], use_inner_text=True)
    expect(row.get_by_role("link", name=str(job.id), exact=True)).to_be_visible()
    expect(row.locator("td.destination")).to_have_text(job.destination)
    expect(row.locator(".status, td:nth-child(2)").first).to_contain_text("failed")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert table.evaluate("element => element.parentElement.scrollWidth <= element.parentElement.clientWidth")


def test_a_retried_jobs_attempts_read_whole_on_a_phone_and_as_a_table_on_a_wide_screen(
    page: Page, holder: Account
) -> None:
    job = FailedJobFactory(account=holder, type=JobType.EMAIL, attempts=1, error_message=LONG_ERROR)
    first_tried = timezone.now() - timedelta(hours=1)
    for attempt in (1, 2, 3, 1):  # three failed attempts, a Retry, and one more
        first_tried += timedelta(minutes=1)
        DeliveryLogFactory(
            job=job,
            attempt=attempt,
            used_provider="SENDGRID",
            response_status=550,
            error_message=LONG_ERROR,
            response_excerpt=LONG_ANSWER,
            created_at=first_tried,
        )
    open_job(page, str(job.id))
    table = page.locator("section").filter(has=page.get_by_role("heading", name="Delivery attempts")).locator("table")

    for width, stacked in ((PHONE_WIDTH, True), (1280, False)):
        page.set_viewport_size({"width": width, "height": 900})
        expect_table_layout(table, stacked=stacked)
        expect(page.get_by_role("rowheader")).to_have_text(["Round 1", "Round 2, after a retry"])
        expect(attempts_table(page)).to_have_count(4)
        for row in attempts_table(page).all():
            expect_whole_on_screen(row.locator(".badge"), width)
            expect(row.locator("td.error")).to_contain_text(LONG_ERROR)
            expect_whole_on_screen(row.locator("td.error"), width)
            expect_whole_on_screen(row.locator("td.error pre"), width)
        expect_no_sideways_scrolling(page, width)
