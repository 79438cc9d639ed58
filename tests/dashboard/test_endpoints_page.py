"""The endpoints page: each webhook destination's last day and its streak of failures, failing ones first."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.db import connection
from django.test import Client as Browser
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Account
from notifications.models import DeliveryLog, DeliveryStatus, DestinationHealth, JobType
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text
from tests.factories import JobFactory

Holder = tuple[Browser, Account]


def attempts(account: Account, destination: str, *durations_ms: int, failed: int = 0, test: bool = False) -> None:
    """One webhook job to ``destination`` with an attempt per duration, the first ``failed`` of them failed; a test
    key's job with ``test``."""
    job = JobFactory(account=account, type=JobType.WEBHOOK, destination=destination, test=test)
    for number, duration in enumerate(durations_ms, start=1):
        status = DeliveryStatus.FAILED if number <= failed else DeliveryStatus.SUCCESS
        DeliveryLog.objects.create(job=job, attempt=number, status=status, duration_ms=duration)


def test_each_destination_shows_its_success_rate_and_median_time_failing_ones_first(holder: Holder) -> None:
    browser, account = holder
    attempts(account, "hooks.example.com", 40, 20, 30)
    attempts(account, "dead.example.net", 900, 700, failed=2)
    DestinationHealth.objects.create(
        account=account,
        destination="dead.example.net",
        origin="https://dead.example.net",
        consecutive_failures=6,
        failing_since=timezone.now() - timedelta(hours=1),
        last_error="503 Service Unavailable",
    )

    page = browser.get("/dashboard/endpoints/")

    assert page.status_code == 200
    assert '<a href="/dashboard/endpoints/" aria-current="page">Endpoint health</a>' in page_html(page)
    text = page_text(page)
    dead, hooks = text.index("dead.example.net"), text.index("hooks.example.com")
    assert dead < hooks
    assert "dead.example.net failing 6 failed in a row since" in text
    assert "0% 2 700 ms 503 Service Unavailable" in text
    assert "hooks.example.com healthy 100% 3 30 ms" in text


def test_a_test_keys_webhooks_count_nowhere(holder: Holder) -> None:
    browser, account = holder
    attempts(account, "hooks.example.com", 40)
    attempts(account, "hooks.example.com", 900, 800, failed=2, test=True)
    attempts(account, "sandbox.example.org", 10, test=True)

    text = page_text(browser.get("/dashboard/endpoints/"))

    assert "hooks.example.com healthy 100% 1 40 ms" in text
    assert "sandbox.example.org" not in text
    assert "1 destination, failing ones first" in text


def failing_streak(account: Account, destination: str, *, failures: int = 6) -> None:
    DestinationHealth.objects.create(
        account=account,
        destination=destination,
        origin=f"https://{destination}",
        consecutive_failures=failures,
        failing_since=timezone.now() - timedelta(days=2),
        last_error="503 Service Unavailable",
    )


def test_the_list_is_paged_failing_ones_first_then_by_attempts(holder: Holder) -> None:
    browser, account = holder
    for n in range(30):
        attempts(account, f"host{n:02}.example.com", *[10] * (1 + n % 3))
    failing_streak(account, "host29.example.com")
    # A streak whose last attempt is older than the day shows too, at no attempts.
    failing_streak(account, "quiet.example.net")

    first, second = browser.get("/dashboard/endpoints/"), browser.get("/dashboard/endpoints/?page=2")

    first_rows = page_html(first).count("<tr>") - 1
    second_text = page_text(second)
    assert first_rows == 25
    assert page_html(second).count("<tr>") - 1 == 6
    text = page_text(first)
    assert "31 destinations, failing ones first, then by attempts." in text
    assert "Page 1 of 2" in text
    assert "Next →" in text
    assert text.index("host29.example.com failing") < text.index("quiet.example.net failing")
    assert text.index("quiet.example.net") < text.index("host02.example.com healthy 100% 3")
    # Then by attempts, most first, and by name among equals: host29 (3 attempts) leads, the ones at one come last.
    assert text.index("host26.example.com") < text.index("host01.example.com") < text.index("host00.example.com")
    assert "Page 2 of 2" in second_text
    assert "← Previous" in second_text
    assert "host27.example.com healthy 100% 1" in second_text
    assert "host29.example.com" not in second_text


def test_the_page_runs_the_same_queries_however_many_destinations(holder: Holder) -> None:
    browser, account = holder
    attempts(account, "one.example.com", 10, 20)
    failing_streak(account, "one.example.com")
    browser.get("/dashboard/endpoints/")
    with CaptureQueriesContext(connection) as few:
        browser.get("/dashboard/endpoints/")
    for n in range(60):
        attempts(account, f"host{n}.example.com", 10, 30, 20, failed=n % 2)
        failing_streak(account, f"host{n}.example.com", failures=n % 7)

    with CaptureQueriesContext(connection) as many:
        page = browser.get("/dashboard/endpoints/")

    assert page.status_code == 200
    assert len(many) == len(few)
    assert "Page 1 of 3" in page_text(page)


def test_a_page_that_is_not_a_number_is_refused(holder: Holder) -> None:
    browser, _ = holder

    page = browser.get("/dashboard/endpoints/?page=abc")

    assert page.status_code == 400
    assert "Page: Enter a whole number." in page_text(page)


def test_another_accounts_destinations_are_not_shown(holder: Holder, make_client: Callable[..., Client]) -> None:
    browser, _ = holder
    other = make_client()
    attempts(other.account, "theirs.example.org", 10)

    page = page_text(browser.get("/dashboard/endpoints/"))

    assert "theirs.example.org" not in page
    assert "No webhook went out in the last 24 hours." in page


def test_signed_out_it_asks_to_sign_in(browser: Browser) -> None:
    page = browser.get("/dashboard/endpoints/")

    assert page.status_code == 302
    assert page["Location"].startswith("/login/")
