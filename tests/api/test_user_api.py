"""The account holder's JSON: jobs, retry, usage and domain status, by dashboard session or API key."""

from __future__ import annotations

from datetime import UTC, date, timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import UsagePeriod
from accounts.selectors import usage_get
from notifications.models import DailyTally, JobStatus, JobType
from tests.clients import APIClient
from tests.conftest import Client, ready_to_send
from tests.factories import FailedJobFactory, JobFactory
from tests.notifications.test_jobs_api import SLIM_KEYS


def signed_in(client: Client, *, csrf: bool = False) -> APIClient:
    browser = APIClient(enforce_csrf_checks=csrf)
    browser.force_login(client.account.user)
    return browser


def error_of(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]


def test_the_job_list_is_the_callers_by_session_or_key_with_the_filters_and_pages(
    startup: Client, make_client: Any
) -> None:
    JobFactory.create_batch(3, account=startup.account, type=JobType.WEBHOOK)
    failed = FailedJobFactory(account=startup.account, type=JobType.EMAIL)
    JobFactory.create_batch(2, account=make_client("startup").account)

    by_session = signed_in(startup).get("/api/v1/user/jobs", {"limit": 2}).json()["data"]
    by_key = startup.get("/api/v1/user/jobs", status="failed").json()["data"]

    assert by_session["pagination"] == {"page": 1, "limit": 2, "total": 4, "totalPages": 2}
    assert len(by_session["data"]) == 2
    assert [job["id"] for job in by_key["data"]] == [str(failed.id)]
    assert set(by_key["data"][0]) == SLIM_KEYS


def test_the_job_list_refuses_a_bad_filter_in_words(startup: Client) -> None:
    response = signed_in(startup).get("/api/v1/user/jobs", {"status": "lost"})

    assert error_of(response) == (400, "status must be one of pending, processing, completed, failed")


def test_retry_by_session_needs_the_csrf_token_and_requeues_a_failed_job(startup: Client) -> None:
    job = FailedJobFactory(account=startup.account)
    browser = signed_in(startup, csrf=True)

    without_token = browser.post(f"/api/v1/user/jobs/{job.id}/retry")
    browser.get("/dashboard/")  # the page sets the CSRF cookie, as a browser would have it
    token = browser.cookies["csrftoken"].value
    with_token = browser.post(f"/api/v1/user/jobs/{job.id}/retry", HTTP_X_CSRFTOKEN=token)

    assert error_of(without_token)[0] == 403
    assert with_token.status_code == 200
    assert with_token.json()["data"] == {
        "jobId": str(job.id),
        "status": "pending",
        "message": "Job has been re-queued for processing",
    }
    job.refresh_from_db()
    assert job.status == JobStatus.PENDING


def test_retry_of_another_accounts_or_an_unfailed_job_is_404(startup: Client, make_client: Any) -> None:
    others = FailedJobFactory(account=make_client("startup").account)
    completed = JobFactory(account=startup.account, status=JobStatus.COMPLETED)
    message = "Job not found or cannot be retried (must be in failed status)"

    for job in (others, completed):
        assert error_of(startup.post(f"/api/v1/user/jobs/{job.id}/retry")) == (404, message)
    others.refresh_from_db()
    assert others.status == JobStatus.FAILED


def test_usage_gives_the_plan_the_count_the_limit_and_the_period(free: Client) -> None:
    free.send_webhook()
    free.send_webhook()
    expected = usage_get(account=free.account)

    data = signed_in(free).get("/api/v1/user/usage").json()["data"]

    assert data == {
        "plan": "free",
        "used": 2,
        "limit": 100,
        "periodStart": expected.period_start.isoformat(),
        "resetsOn": expected.resets_on.isoformat(),
    }
    assert date.fromisoformat(data["periodStart"]) <= timezone.now().date() < date.fromisoformat(data["resetsOn"])
    assert UsagePeriod.objects.get(account=free.account).used == 2


def test_a_paid_plans_usage_counts_webhooks_against_its_quota(startup: Client) -> None:
    ready_to_send(startup, "SENDGRID")
    startup.send_webhook()
    startup.send_email(**{"from": "billing@example.com"})

    data = startup.get("/api/v1/user/usage").json()["data"]

    assert (data["plan"], data["used"], data["limit"]) == ("startup", 1, 15_000)


@pytest.mark.usefixtures("db")
def test_the_user_endpoints_need_a_session_or_a_key() -> None:
    for path in ["/api/v1/user/usage", "/api/v1/user/jobs", "/api/v1/user/domain/status"]:
        assert error_of(APIClient().get(path)) == (401, "Sign in or send an API key")


def test_domain_status_is_the_domain_and_takes_no_delete(startup: Client) -> None:
    ready_to_send(startup, "SENDGRID")
    browser = signed_in(startup)

    status = browser.get("/api/v1/user/domain/status")
    domain = browser.get("/api/v1/user/domain")
    delete = browser.delete("/api/v1/user/domain/status")

    assert status.status_code == 200
    assert status.json()["data"] == domain.json()["data"]
    assert (status.json()["data"]["domain"], status.json()["data"]["status"]) == ("example.com", "verified")
    assert delete.status_code == 405
    assert browser.get("/api/v1/user/domain").status_code == 200


def finished(account: Any, status: str, days_ago: int, count: int = 1) -> None:
    """Counts ``count`` jobs as the worker does when they finish (tests/notifications/test_daily_tally.py)."""
    day = (timezone.now() - timedelta(days=days_ago)).astimezone(UTC).date()
    tally, _ = DailyTally.objects.get_or_create(account=account, day=day)
    setattr(tally, status, getattr(tally, status) + count)
    tally.save()


def test_the_dashboard_figures_count_each_days_completed_and_failed_jobs(startup: Client, make_client: Any) -> None:
    finished(startup.account, JobStatus.COMPLETED, 0, count=3)
    finished(startup.account, JobStatus.FAILED, 0)
    finished(startup.account, JobStatus.COMPLETED, 6, count=2)
    finished(startup.account, JobStatus.FAILED, 7)  # a day before the 7-day period
    JobFactory(account=startup.account, status=JobStatus.PENDING)
    finished(make_client("startup").account, JobStatus.COMPLETED, 0, count=5)
    today = timezone.now().astimezone(UTC).date()

    data = signed_in(startup).get("/api/v1/user/dashboard", {"days": "7"}).json()["data"]

    assert [day["date"] for day in data["days"]] == [(today - timedelta(days=n)).isoformat() for n in range(6, -1, -1)]
    assert data["days"][0] == {"date": (today - timedelta(days=6)).isoformat(), "completed": 2, "failed": 0}
    assert data["days"][-1] == {"date": today.isoformat(), "completed": 3, "failed": 1}
    assert all(day["completed"] == day["failed"] == 0 for day in data["days"][1:-1])
    assert data["totals"] == {"completed": 5, "failed": 1}


def test_the_dashboard_figures_default_to_30_days_and_take_7_30_or_90(startup: Client) -> None:
    finished(startup.account, JobStatus.FAILED, 60)

    default = startup.get("/api/v1/user/dashboard").json()["data"]
    quarter = startup.get("/api/v1/user/dashboard", days="90").json()["data"]

    assert (len(default["days"]), default["totals"]) == (30, {"completed": 0, "failed": 0})
    assert (len(quarter["days"]), quarter["totals"]) == (90, {"completed": 0, "failed": 1})
    assert error_of(startup.get("/api/v1/user/dashboard", days="14")) == (400, "days must be one of 7, 30, 90")
    assert error_of(startup.get("/api/v1/user/dashboard", days="week")) == (400, "days must be a positive integer")
