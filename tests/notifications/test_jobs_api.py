from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from notifications.models import Job, JobStatus, JobType
from tests.api.test_envelope import assert_error
from tests.conftest import Client
from tests.factories import DeliveryLogFactory, FailedJobFactory, JobFactory

JOBS = "/api/v1/notifications/jobs"
SLIM_KEYS = {
    "id",
    "type",
    "status",
    "destination",
    "priority",
    "attempts",
    "errorMessage",
    "createdAt",
    "completedAt",
    "scheduledFor",
}


def test_get_job_returns_every_field(free: Client) -> None:
    job_id = free.send_webhook(priority=10).json()["data"]["jobId"]

    response = free.get(f"{JOBS}/{job_id}")

    assert response.status_code == 200
    data = response.json()["data"]
    assert SLIM_KEYS | {"payload", "maxAttempts", "startedAt", "deliveryLogs", "nextAttemptAt", "events"} == set(data)
    assert data["id"] == job_id
    assert (data["type"], data["status"], data["priority"], data["attempts"]) == ("webhook", "pending", 10, 0)
    assert data["destination"] == "hooks.example.com"
    assert data["maxAttempts"] == 3
    assert data["payload"]["payload"] == {"event": "signup", "id": 42}
    assert (data["startedAt"], data["completedAt"], data["errorMessage"], data["scheduledFor"]) == (
        None,
        None,
        None,
        None,
    )
    assert data["deliveryLogs"] == []


def test_get_job_lists_delivery_logs_in_attempt_order(free: Client) -> None:
    job = FailedJobFactory(account=free.account)
    now = timezone.now()
    DeliveryLogFactory(job=job, attempt=2, created_at=now - timedelta(minutes=1))
    DeliveryLogFactory(job=job, attempt=1, created_at=now - timedelta(minutes=3))

    logs = free.get(f"{JOBS}/{job.id}").json()["data"]["deliveryLogs"]

    assert [log["attempt"] for log in logs] == [1, 2]
    assert logs[0] == {
        "id": logs[0]["id"],
        "attempt": 1,
        "status": "failed",
        "usedProvider": None,
        "errorMessage": "503 Service Unavailable",
        "responseStatus": 503,
        "durationMs": 12,
        "createdAt": logs[0]["createdAt"],
    }


@pytest.mark.parametrize("job_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_job_is_404(free: Client, job_id: str) -> None:
    assert_error(free.get(f"{JOBS}/{job_id}"), 404, "Job not found")


def test_another_accounts_job_is_404(make_client: Callable[..., Client]) -> None:
    owner, other = make_client(), make_client()
    job = FailedJobFactory(account=owner.account)

    assert_error(other.get(f"{JOBS}/{job.id}"), 404, "Job not found")
    assert_error(
        other.post(f"{JOBS}/{job.id}/retry"), 404, "Job not found or cannot be retried (must be in failed status)"
    )
    assert other.get(JOBS).json()["data"]["pagination"]["total"] == 0


def test_list_returns_slim_jobs_newest_first(free: Client) -> None:
    jobs = [JobFactory(account=free.account) for _ in range(3)]

    response = free.get(JOBS)

    assert response.status_code == 200
    data = response.json()["data"]
    assert [item["id"] for item in data["data"]] == [str(job.id) for job in reversed(jobs)]
    assert all(set(item) == SLIM_KEYS for item in data["data"])
    assert data["pagination"] == {"page": 1, "limit": 20, "total": 3, "totalPages": 1}


def test_list_pages(free: Client) -> None:
    jobs = [JobFactory(account=free.account) for _ in range(5)]

    data = free.get(JOBS, page="2", limit="2").json()["data"]

    assert [item["id"] for item in data["data"]] == [str(jobs[2].id), str(jobs[1].id)]
    assert data["pagination"] == {"page": 2, "limit": 2, "total": 5, "totalPages": 3}


def test_a_page_past_the_end_is_empty(free: Client) -> None:
    JobFactory(account=free.account)

    data = free.get(JOBS, page="9").json()["data"]

    assert data == {"data": [], "pagination": {"page": 9, "limit": 20, "total": 1, "totalPages": 1}}


def test_filters_combine(free: Client) -> None:
    JobFactory(account=free.account, type=JobType.EMAIL, status=JobStatus.FAILED)
    wanted = JobFactory(account=free.account, type=JobType.WEBHOOK, status=JobStatus.FAILED)
    JobFactory(account=free.account, type=JobType.WEBHOOK, status=JobStatus.COMPLETED)

    data = free.get(JOBS, type="webhook", status="failed").json()["data"]

    assert [item["id"] for item in data["data"]] == [str(wanted.id)]
    assert data["pagination"]["total"] == 1


def test_limit_is_capped_at_100(free: Client) -> None:
    Job.objects.bulk_create([JobFactory.build(account=free.account) for _ in range(105)])

    data = free.get(JOBS, limit="500").json()["data"]

    assert len(data["data"]) == 100
    assert data["pagination"] == {"page": 1, "limit": 100, "total": 105, "totalPages": 2}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"page": "0"}, "page must be a positive integer"),
        ({"page": "-1"}, "page must be a positive integer"),
        ({"page": "two"}, "page must be a positive integer"),
        ({"limit": "0"}, "limit must be a positive integer"),
        ({"limit": "1.5"}, "limit must be a positive integer"),
        ({"type": "sms"}, "type must be one of email, webhook"),
        ({"status": "done"}, "status must be one of pending, processing, completed, failed"),
    ],
)
def test_bad_list_parameters_are_400(free: Client, params: dict[str, str], message: str) -> None:
    assert_error(free.get(JOBS, **params), 400, message)


@pytest.mark.parametrize("path", [JOBS, "/api/v1/user/jobs"])
def test_a_page_number_of_more_than_9_digits_is_400(free: Client, path: str) -> None:
    assert_error(free.get(path, page="1" + "0" * 29), 400, "page must be a positive integer")


@pytest.mark.parametrize("path", [JOBS, "/api/v1/user/jobs"])
def test_the_largest_page_number_is_an_empty_page(free: Client, path: str) -> None:
    JobFactory(account=free.account)

    data = free.get(path, page="999999999", limit="100").json()["data"]

    assert data == {"data": [], "pagination": {"page": 999999999, "limit": 100, "total": 1, "totalPages": 1}}


@pytest.mark.parametrize("page_size", [1, 20, 100])
def test_list_runs_a_constant_number_of_queries(free: Client, django_assert_num_queries: Any, page_size: int) -> None:
    Job.objects.bulk_create([JobFactory.build(account=free.account) for _ in range(100)])
    free.get("/api/v1/ping")  # the key's use is recorded, once a minute (docs/rules.md, "API keys and scopes")

    # API key lookup, count, page.
    with django_assert_num_queries(3):
        response = free.get(JOBS, limit=str(page_size))

    assert len(response.json()["data"]["data"]) == page_size


def test_retry_requeues_a_failed_job(
    free: Client, broker_messages: Callable[[], list[dict[str, Any]]], django_capture_on_commit_callbacks: Any
) -> None:
    job = FailedJobFactory(account=free.account, attempts=3, claims=6, finished_at=timezone.now())
    DeliveryLogFactory(job=job, attempt=1)

    with django_capture_on_commit_callbacks(execute=True):
        response = free.post(f"{JOBS}/{job.id}/retry")

    assert response.status_code == 200
    assert response.json()["data"] == {
        "jobId": str(job.id),
        "status": "pending",
        "message": "Job has been re-queued for processing",
    }
    job.refresh_from_db()
    # Its attempts start again, and so does the count of workers that died holding it.
    assert (job.status, job.attempts, job.claims, job.error_message, job.finished_at) == ("pending", 0, 0, None, None)
    assert job.delivery_logs.count() == 1
    assert broker_messages() == [{"task": "notifications.deliver_job", "args": [str(job.id)], "priority": 5}]


@pytest.mark.parametrize("status", [JobStatus.PENDING, JobStatus.PROCESSING, JobStatus.COMPLETED])
def test_only_failed_jobs_can_be_retried(free: Client, status: str) -> None:
    job = JobFactory(account=free.account, status=status)

    response = free.post(f"{JOBS}/{job.id}/retry")

    assert_error(response, 404, "Job not found or cannot be retried (must be in failed status)")
    job.refresh_from_db()
    assert job.status == status


def test_retry_of_an_unknown_job_is_404(free: Client) -> None:
    assert_error(free.post(f"{JOBS}/nope/retry"), 404, "Job not found or cannot be retried (must be in failed status)")


def test_retry_spends_no_quota(free: Client) -> None:
    job = FailedJobFactory(account=free.account)

    free.post(f"{JOBS}/{job.id}/retry")

    assert not free.account.usage_periods.exists()
