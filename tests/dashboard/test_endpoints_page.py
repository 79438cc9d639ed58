"""The endpoints page: each webhook destination's last day and its streak of failures, failing ones first."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account
from notifications.models import DeliveryLog, DeliveryStatus, DestinationHealth, JobType
from tests.conftest import Client
from tests.dashboard.pages import page_text
from tests.factories import JobFactory

Holder = tuple[Browser, Account]


def attempts(account: Account, destination: str, *durations_ms: int, failed: int = 0) -> None:
    """One webhook job to ``destination`` with an attempt per duration, the first ``failed`` of them failed."""
    job = JobFactory(account=account, type=JobType.WEBHOOK, destination=destination)
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
    text = page_text(page)
    dead, hooks = text.index("dead.example.net"), text.index("hooks.example.com")
    assert dead < hooks
    assert "dead.example.net failing 6 failed in a row since" in text
    assert "0% 2 700 ms 503 Service Unavailable" in text
    assert "hooks.example.com healthy 100% 3 30 ms" in text


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
