"""The home page's chart and recent jobs, the jobs list, a job's page, Retry and Cancel."""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account
from core.errors import JobNotCancellable, ProviderKeyRequired
from dashboard.chart import scale_max
from notifications.engine.processing import job_process
from notifications.models import DailyTally, Job, JobStatus, JobType
from notifications.services import CANCELLED_MESSAGE, NOT_RETRYABLE_MESSAGE, REQUEUED_MESSAGE
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text
from tests.factories import DeliveryLogFactory, EmailEventFactory, FailedJobFactory, JobFactory
from tests.fakes.receiver import Receiver

Holder = tuple[Browser, Account]


def listed_ids(response: Any) -> list[str]:
    """The job ids a list shows, in its order."""
    return re.findall(r'href="/dashboard/jobs/([0-9a-f-]{36})/"', response.content.decode())


def newest_first(jobs: list[Job]) -> list[str]:
    return [str(job.id) for job in sorted(jobs, key=lambda job: job.created_at, reverse=True)]


# --- the home page --------------------------------------------------------------------------------


@pytest.mark.parametrize(("largest", "top"), [(0, 5), (5, 5), (6, 10), (11, 20), (27, 50), (101, 200), (5000, 5000)])
def test_the_charts_scale_is_the_next_1_2_or_5_times_a_power_of_ten(largest: int, top: int) -> None:
    assert scale_max(largest) == top


def test_the_home_page_charts_30_days_of_completed_and_failed_jobs(holder: Holder) -> None:
    browser, account = holder
    today = timezone.now().astimezone(UTC).date()
    DailyTally.objects.create(account=account, day=today, completed=7, failed=3)
    DailyTally.objects.create(account=account, day=today - timedelta(days=29), completed=2, failed=0)
    DailyTally.objects.create(account=account, day=today - timedelta(days=30), completed=50, failed=50)

    page = browser.get("/dashboard/")
    html = page_html(page)

    assert page.status_code == 200
    assert f"<title>{today:%b} {today.day}: 7 completed, 3 failed</title>" in html
    assert "Last 30 days: 9 completed, 3 failed" in html
    assert html.count('<g class="day">') == 30
    # The tallest day, 10 jobs, fills the scale: 7 completed below 3 failed.
    assert re.search(r'class="completed" x="[\d.]+" y="63.6" width="[\d.]+" height="92.4"', html)
    assert re.search(r'class="failed" x="[\d.]+" y="24.0" width="[\d.]+" height="39.6"', html)
    # The dashed line at the scale's top is marked with what it measures, not read as a daily limit.
    assert re.search(r'<text class="scale" x="2" y="19">10 jobs</text>', html)
    assert "a day</text>" not in html
    assert "Completed: 9" in page_text(page)
    # Today's date ends at the drawing's right edge instead of running past it.
    assert f'x="600.0" y="174" text-anchor="end">{today:%b} {today.day}</text>' in html


def test_the_home_page_lists_the_five_newest_jobs(holder: Holder, free: Client) -> None:
    browser, account = holder
    jobs = JobFactory.create_batch(7, account=account)
    JobFactory(account=free.account)

    page = browser.get("/dashboard/")

    assert listed_ids(page) == newest_first(jobs)[:5]
    assert 'href="/dashboard/jobs/"' in page_html(page)
    assert "Send your first notification done" in page_text(page)


def test_a_new_holders_home_page_says_there_are_no_jobs_yet(holder: Holder) -> None:
    browser, _ = holder

    text = page_text(browser.get("/dashboard/"))

    assert "No jobs yet: the next steps below end with your first one." in text
    assert "Last 30 days: 0 completed, 0 failed" in page_html(browser.get("/dashboard/"))


def test_paid_email_is_unlimited_on_the_usage_meter(holder: Holder, browser: Browser, free: Client) -> None:
    paid, _ = holder
    browser.force_login(free.account.user)

    assert "Emails: unlimited" in page_text(paid.get("/dashboard/"))
    assert "unlimited" not in page_text(browser.get("/dashboard/"))


# --- the jobs list --------------------------------------------------------------------------------


def test_the_jobs_page_lists_the_holders_jobs_newest_first(holder: Holder, free: Client) -> None:
    browser, account = holder
    jobs = JobFactory.create_batch(3, account=account)
    JobFactory(account=free.account)

    page = browser.get("/dashboard/jobs/")

    assert page.status_code == 200
    assert listed_ids(page) == newest_first(jobs)
    assert "Page 1" in page_text(page)
    assert 'rel="next"' not in page_html(page)


def test_the_jobs_page_filters_by_type_and_status(holder: Holder) -> None:
    browser, account = holder
    failed_email = FailedJobFactory(account=account, type=JobType.EMAIL, payload={"to": "a@example.com"})
    FailedJobFactory(account=account, type=JobType.WEBHOOK)
    JobFactory(account=account, type=JobType.EMAIL, status=JobStatus.COMPLETED, payload={"to": "b@example.com"})

    both = browser.get("/dashboard/jobs/", {"type": "email", "status": "failed"})
    by_status = browser.get("/dashboard/jobs/", {"status": "failed"})
    none = browser.get("/dashboard/jobs/", {"type": "email", "status": "processing"})

    assert listed_ids(both) == [str(failed_email.id)]
    assert '<option value="email" selected>' in page_html(both)
    assert len(listed_ids(by_status)) == 2
    assert listed_ids(none) == []
    assert "No jobs match. Show all jobs" in page_text(none)


def test_the_jobs_page_pages_by_25_keeping_the_filters(holder: Holder) -> None:
    browser, account = holder
    jobs = FailedJobFactory.create_batch(27, account=account)
    JobFactory.create_batch(3, account=account, status=JobStatus.COMPLETED)
    expected = newest_first(jobs)

    first = browser.get("/dashboard/jobs/", {"status": "failed"})
    second = browser.get("/dashboard/jobs/", {"status": "failed", "page": "2"})

    assert listed_ids(first) == expected[:25]
    assert 'href="?status=failed&amp;page=2" rel="next"' in page_html(first)
    assert 'rel="prev"' not in page_html(first)
    assert listed_ids(second) == expected[25:]
    assert 'href="?status=failed&amp;page=1" rel="prev"' in page_html(second)
    assert 'rel="next"' not in page_html(second)


def test_the_jobs_page_reads_a_page_in_one_query_whatever_its_size(
    holder: Holder, django_assert_max_num_queries: Any
) -> None:
    browser, account = holder
    JobFactory.create_batch(30, account=account)

    # Session, user, account, then the page's jobs: no count, nothing per job.
    with django_assert_max_num_queries(4):
        assert browser.get("/dashboard/jobs/").status_code == 200


def test_the_jobs_page_filters_by_tag_with_the_other_filters(
    holder: Holder, django_assert_max_num_queries: Any
) -> None:
    browser, account = holder
    body = {"subject": "Receipt", "body": "<p>Thanks</p>"}
    receipts = [
        FailedJobFactory(account=account, type=JobType.EMAIL, payload={**body, "to": to, "tags": ["receipt", "eu"]})
        for to in ("ada@example.com", "grace@example.com")
    ]
    JobFactory(account=account, type=JobType.EMAIL, payload={**body, "to": "ada@example.com", "tags": ["receipt"]})
    FailedJobFactory(account=account, type=JobType.EMAIL, payload={**body, "to": "ada@example.com", "tags": ["eu"]})

    with django_assert_max_num_queries(4):  # session, user, account, the page's jobs: as without a tag
        by_tag = browser.get("/dashboard/jobs/", {"tag": "receipt", "status": "failed"})
    to_one = browser.get("/dashboard/jobs/", {"tag": "receipt", "status": "failed", "to": "ADA@example.com"})

    assert listed_ids(by_tag) == newest_first(receipts)
    assert 'name="tag" value="receipt"' in page_html(by_tag)
    assert listed_ids(to_one) == [str(receipts[0].id)]
    assert "No jobs match." in page_text(browser.get("/dashboard/jobs/", {"tag": "Receipt"}))


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"tag": "two words"}, "Enter a tag of 1 to 64 of A-Z, a-z, 0-9, _ and -."),
        ({"tag": "x" * 65}, "Enter a tag of 1 to 64 of A-Z, a-z, 0-9, _ and -."),
        ({"status": "lost"}, "Select a valid choice. lost is not one of the available choices."),
        ({"type": "sms"}, "Select a valid choice. sms is not one of the available choices."),
        ({"page": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"page": "-1"}, "Ensure this value is greater than or equal to 1."),
        ({"page": "two"}, "Enter a whole number."),
    ],
)
def test_a_bad_filter_is_400_and_says_why(holder: Holder, query: dict[str, str], message: str) -> None:
    browser, account = holder
    JobFactory(account=account)

    page = browser.get("/dashboard/jobs/", query)

    assert page.status_code == 400
    assert message in page_text(page)
    assert "Show all jobs" in page_text(page)
    assert listed_ids(page) == []


# The last page of 25 whose rows a 64-bit LIMIT and OFFSET can reach (the database's limit), and the next.
LAST_NUMBERED_PAGE = (2**63 - 1 - 26) // 25 + 1


@pytest.mark.parametrize("page", ["3", str(LAST_NUMBERED_PAGE), str(LAST_NUMBERED_PAGE + 1), "9" * 19, "1" + "0" * 29])
def test_a_page_past_the_last_is_empty_however_large_its_number(holder: Holder, page: str) -> None:
    browser, account = holder
    JobFactory(account=account)

    answer = browser.get("/dashboard/jobs/", {"page": page})

    assert answer.status_code == 200
    assert listed_ids(answer) == []
    assert "No jobs match. Show all jobs" in page_text(answer)


def test_the_jobs_page_needs_a_signed_in_holder(browser: Browser) -> None:
    page = browser.get("/dashboard/jobs/")

    assert (page.status_code, page["Location"]) == (302, "/login/?next=/dashboard/jobs/")


# --- a job's page and Retry -------------------------------------------------------------------------


def test_a_jobs_page_shows_its_payload_attempts_and_next_attempt(holder: Holder) -> None:
    browser, account = holder
    due = timezone.now() + timedelta(minutes=2)
    job = JobFactory(
        account=account,
        status=JobStatus.PROCESSING,
        attempts=1,
        next_attempt_at=due,
        error_message="503 Service Unavailable",
        payload={"url": "https://hooks.example.com/in", "method": "POST", "headers": {}, "payload": {"order": "<42>"}},
    )
    DeliveryLogFactory(job=job, attempt=1, response_status=503, duration_ms=87, response_excerpt="try later")

    page = browser.get(f"/dashboard/jobs/{job.id}/")
    text = page_text(page)

    assert page.status_code == 200
    assert "processing waiting to retry" in text
    assert "Attempts 1 of 3" in text
    assert f"Next attempt {due:%Y-%m-%d %H:%M:%S} UTC" in text
    assert '"order": "<42>"' in text
    assert "&lt;42&gt;" in page_html(page)
    assert "Attempt Time (UTC) Result Provider Status code Duration Error 1 " in text
    assert "failed — 503 87 ms 503 Service Unavailable try later" in text
    assert "Retry" not in text
    assert "Provider events" not in text


def test_an_email_jobs_page_shows_its_provider_and_events(holder: Holder) -> None:
    browser, account = holder
    job = JobFactory(
        account=account, type=JobType.EMAIL, status=JobStatus.COMPLETED, attempts=1, payload={"to": "ada@example.com"}
    )
    DeliveryLogFactory(
        job=job, attempt=1, status="success", used_provider="POSTMARK", response_status=200, error_message=None
    )
    EmailEventFactory(job=job, provider="POSTMARK", type="OPENED", recipient="ada@example.com")

    text = page_text(browser.get(f"/dashboard/jobs/{job.id}/"))

    assert "success Postmark 200" in text
    assert "OPENED Postmark" in text
    assert text.count("ada@example.com") == 3  # the message's To, the payload's "to" and the event's recipient
    assert "Message To ada@example.com Payload" in text  # nothing more: the email was sent without cc, tags, ...


def test_an_email_jobs_page_shows_its_recipients_reply_to_tags_metadata_and_skipped_recipients_escaped(
    holder: Holder,
) -> None:
    browser, account = holder
    payload = {
        "to": "ada@example.com",
        "subject": "Invoice",
        "body": "<p>Attached</p>",
        "cc": ["grace@example.com", "gone@example.com"],
        "bcc": ["audit@example.com"],
        "replyTo": "Acme Billing <billing@acme.com>",
        "tags": ["invoice", "eu-west"],
        "metadata": {"order_id": "A-17", "note": "<script>alert(1)</script>"},
        "skippedRecipients": [{"email": "gone@example.com", "reason": "hard_bounce"}],
    }
    job = JobFactory(account=account, type=JobType.EMAIL, payload=payload)

    page = browser.get(f"/dashboard/jobs/{job.id}/")
    text, html = page_text(page), page_html(page)

    assert (
        "Message To ada@example.com Cc grace@example.com, gone@example.com Bcc audit@example.com "
        "Reply-to Acme Billing <billing@acme.com> Tags invoice eu-west "
        "Metadata Key Value order_id A-17 note <script>alert(1)</script> Skipped recipients"
    ) in text
    assert "the others. Address Reason gone@example.com hard_bounce Payload" in text
    assert "Acme Billing &lt;billing@acme.com&gt;" in html
    assert "<script>alert(1)</script>" not in html
    assert '<td data-label="Value">&lt;script&gt;alert(1)&lt;/script&gt;</td>' in html
    assert 'href="/dashboard/jobs/?tag=eu-west"' in html


def test_a_reply_to_list_is_shown_whole(holder: Holder) -> None:
    browser, account = holder
    reply_to = ["support@acme.com", "Sales <sales@acme.com>"]
    job = JobFactory(account=account, type=JobType.EMAIL, payload={"to": "ada@example.com", "replyTo": reply_to})

    text = page_text(browser.get(f"/dashboard/jobs/{job.id}/"))

    assert "Reply-to support@acme.com, Sales <sales@acme.com> Payload" in text


def test_a_webhook_jobs_page_has_no_message(holder: Holder) -> None:
    browser, account = holder
    job = JobFactory(account=account)

    assert "Message" not in page_text(browser.get(f"/dashboard/jobs/{job.id}/"))


def test_another_accounts_job_and_a_bad_id_are_404(holder: Holder, free: Client) -> None:
    browser, _ = holder
    theirs = FailedJobFactory(account=free.account)

    page = browser.get(f"/dashboard/jobs/{theirs.id}/")
    assert page.status_code == 404
    assert "Page not found There is nothing at this address, or it belongs to another account." in page_text(page)
    assert browser.post(f"/dashboard/jobs/{theirs.id}/retry/").status_code == 404
    assert browser.get("/dashboard/jobs/not-a-job/").status_code == 404
    assert Job.objects.get(id=theirs.id).status == JobStatus.FAILED


def test_retry_requeues_a_failed_job_and_says_so(
    holder: Holder, broker_messages: Any, django_capture_on_commit_callbacks: Any
) -> None:
    browser, account = holder
    job = FailedJobFactory(account=account)
    assert "Retry" in page_text(browser.get(f"/dashboard/jobs/{job.id}/"))

    with django_capture_on_commit_callbacks(execute=True):
        answer = browser.post(f"/dashboard/jobs/{job.id}/retry/", follow=True)

    job.refresh_from_db()
    assert answer.redirect_chain == [(f"/dashboard/jobs/{job.id}/", 302)]
    assert REQUEUED_MESSAGE in page_text(answer)
    assert (job.status, job.attempts, job.error_message) == (JobStatus.PENDING, 0, None)
    assert [message["args"] for message in broker_messages()] == [[str(job.id)]]
    assert "Retry" not in page_text(browser.get(f"/dashboard/jobs/{job.id}/"))


@pytest.mark.django_db(transaction=True)
def test_a_retried_jobs_attempts_are_grouped_by_round(
    holder: Holder, receiver: Receiver, delivery_settings: Any, broker_messages: Any
) -> None:
    browser, account = holder
    first_tried = timezone.now() - timedelta(hours=1)
    payload = {"url": receiver.url(), "method": "POST", "headers": {}, "payload": {"n": 1}}
    job = FailedJobFactory(account=account, payload=payload)
    for attempt in (1, 2, 3):
        DeliveryLogFactory(job=job, attempt=attempt, created_at=first_tried + timedelta(minutes=attempt))
    one_round = page_text(browser.get(f"/dashboard/jobs/{job.id}/"))

    browser.post(f"/dashboard/jobs/{job.id}/retry/")
    retried = page_text(browser.get(f"/dashboard/jobs/{job.id}/"))
    assert [message["args"] for message in broker_messages()] == [[str(job.id)]]
    job_process(job_id=job.id)
    tried_again = browser.get(f"/dashboard/jobs/{job.id}/")

    assert "Attempts 3 of 3 Created" in one_round
    assert "Round" not in one_round
    assert "Attempts 0 of 3 in round 2" in retried
    assert "Round 2, after a retry: no attempt yet" in retried
    assert len(receiver.wait_for(1)) == 1
    assert Job.objects.get(id=job.id).status == JobStatus.COMPLETED
    text = page_text(tried_again)
    assert "Attempts 1 of 3 in round 2" in text
    # Each round is a group of rows under its own heading: 1, 2, 3, then 1 again.
    assert re.findall(r"Round \d[^:]*?(?= \d )|(?<= )\d (?=\d{4}-)", text) == [
        "Round 1",
        "1 ",
        "2 ",
        "3 ",
        "Round 2, after a retry",
        "1 ",
    ]
    assert '<tbody> <tr class="round"><th colspan="7" scope="rowgroup">Round 2, after a retry</th></tr>' in page_html(
        tried_again
    )
    assert "no attempt yet" not in text


def test_retry_of_a_job_that_is_not_failed_says_why(holder: Holder) -> None:
    browser, account = holder
    job = JobFactory(account=account, status=JobStatus.COMPLETED)

    answer = browser.post(f"/dashboard/jobs/{job.id}/retry/", follow=True)

    assert NOT_RETRYABLE_MESSAGE in page_text(answer)
    assert Job.objects.get(id=job.id).status == JobStatus.COMPLETED


def test_retry_of_a_paid_email_without_a_provider_key_says_why(holder: Holder) -> None:
    browser, account = holder
    job = FailedJobFactory(account=account, type=JobType.EMAIL, payload={"to": "a@example.com"})

    answer = browser.post(f"/dashboard/jobs/{job.id}/retry/", follow=True)

    assert " ".join(ProviderKeyRequired.message.split()) in page_text(answer)
    assert Job.objects.get(id=job.id).status == JobStatus.FAILED


def test_retry_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)
    job = FailedJobFactory(account=startup.account)

    assert browser.post(f"/dashboard/jobs/{job.id}/retry/").status_code == 403
    assert Job.objects.get(id=job.id).status == JobStatus.FAILED


def test_cancel_stops_a_pending_job_and_says_so(holder: Holder) -> None:
    browser, account = holder
    job = JobFactory(account=account, status=JobStatus.PENDING)
    assert "Cancel job" in page_text(browser.get(f"/dashboard/jobs/{job.id}/"))

    answer = browser.post(f"/dashboard/jobs/{job.id}/cancel/", follow=True)

    job.refresh_from_db()
    assert answer.redirect_chain == [(f"/dashboard/jobs/{job.id}/", 302)]
    assert CANCELLED_MESSAGE in page_text(answer)
    assert (job.status, job.error_message, job.attempts) == (JobStatus.FAILED, "Cancelled", 0)
    shown = page_text(browser.get(f"/dashboard/jobs/{job.id}/"))
    assert "Cancel job" not in shown
    assert "Retry" in shown


def test_cancel_of_a_job_a_worker_took_says_why(holder: Holder) -> None:
    browser, account = holder
    job = JobFactory(account=account, status=JobStatus.PROCESSING)
    assert "Cancel job" not in page_text(browser.get(f"/dashboard/jobs/{job.id}/"))

    answer = browser.post(f"/dashboard/jobs/{job.id}/cancel/", follow=True)

    assert JobNotCancellable.message in page_text(answer)
    assert Job.objects.get(id=job.id).status == JobStatus.PROCESSING


def test_cancel_of_another_accounts_job_is_404(holder: Holder, free: Client) -> None:
    browser, _ = holder
    theirs = JobFactory(account=free.account, status=JobStatus.PENDING)

    assert browser.post(f"/dashboard/jobs/{theirs.id}/cancel/").status_code == 404
    assert Job.objects.get(id=theirs.id).status == JobStatus.PENDING


def test_cancel_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)
    job = JobFactory(account=startup.account, status=JobStatus.PENDING)

    assert browser.post(f"/dashboard/jobs/{job.id}/cancel/").status_code == 403
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING


def test_a_scheduled_job_shows_when_it_goes_out_on_its_page_and_in_the_list(holder: Holder) -> None:
    browser, account = holder
    send_at = (timezone.now() + timedelta(hours=3)).replace(microsecond=0)
    job = JobFactory(account=account, status=JobStatus.PENDING, scheduled_for=send_at, locked_until=send_at)

    shown = page_text(browser.get(f"/dashboard/jobs/{job.id}/"))
    listed = page_text(browser.get("/dashboard/jobs/"))

    assert f"Scheduled for {send_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" in shown
    assert "Cancel job" in shown
    assert f"pending for {send_at.astimezone(UTC):%b %-d, %H:%M}" in listed
