"""GET /metrics: the jobs counted where they are accepted and delivered, the queue read at scrape time, requests
timed by route and status, the token, and the sum over processes that share PROMETHEUS_MULTIPROC_DIR."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from notifications.models import Job, JobStatus
from notifications.services import webhook_job_create
from tests.clients import APIClient
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Receiver, Reply

ROOT = Path(__file__).resolve().parent.parent
ATTEMPT_SECONDS = "notifyhub_delivery_attempt_duration_seconds"
REQUEST_SECONDS = "notifyhub_http_request_duration_seconds"
COUNTERS = ["notifyhub_jobs_accepted", "notifyhub_jobs_delivered", "notifyhub_jobs_failed"]


def scrape(**headers: str) -> list[Sample]:
    response = APIClient().get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return [sample for family in text_string_to_metric_families(response.content.decode()) for sample in family.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float:
    matching = [sample.value for sample in samples if sample.name == name and sample.labels == labels]
    assert len(matching) == 1, f"{name} {labels}: {matching}"
    return matching[0]


def attempts(samples: list[Sample], job_type: str, outcome: str) -> float:
    return value(samples, f"{ATTEMPT_SECONDS}_count", type=job_type, outcome=outcome)


def requests_timed(samples: list[Sample], route: str, status: int) -> float:
    """How many answers of ``status`` the route's histogram counted; 0 before its first (series start then)."""
    name, labels = f"{REQUEST_SECONDS}_count", {"route": route, "status": str(status)}
    return next((sample.value for sample in samples if sample.name == name and sample.labels == labels), 0)


def wait_for_value(name: str, expected: float, timeout: float = 10.0, **labels: str) -> float:
    """The worker counts an attempt just after recording it: a scrape may come a moment before."""
    deadline = time.monotonic() + timeout
    while (current := value(scrape(), name, **labels)) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return current


def test_every_metric_is_there_from_the_start_with_its_labels(db: None) -> None:
    samples = scrape()

    for name in COUNTERS:
        for job_type in ["email", "webhook"]:
            assert value(samples, f"{name}_total", type=job_type) >= 0
    for job_type in ["email", "webhook"]:
        for outcome in ["success", "failed"]:
            assert attempts(samples, job_type, outcome) >= 0
    assert value(samples, "notifyhub_jobs_pending") == 0
    assert value(samples, "notifyhub_oldest_pending_job_age_seconds") == 0


def test_a_job_accepted_through_the_api_is_counted_by_its_type(free: Client) -> None:
    before = scrape()

    assert free.send_webhook().status_code == 202

    after = scrape()
    accepted = "notifyhub_jobs_accepted_total"
    assert value(after, accepted, type="webhook") == value(before, accepted, type="webhook") + 1
    assert value(after, accepted, type="email") == value(before, accepted, type="email")


def test_a_refused_send_is_not_counted(free: Client) -> None:
    before = value(scrape(), "notifyhub_jobs_accepted_total", type="webhook")

    assert free.send_webhook(url="http://not-https.example.com").status_code == 400

    assert value(scrape(), "notifyhub_jobs_accepted_total", type="webhook") == before


@pytest.mark.usefixtures("worker")
def test_a_delivery_by_the_worker_is_counted_with_its_duration(free: Client, receiver: Receiver) -> None:
    before = scrape()

    response = free.send_webhook(url=receiver.url("/hook"))
    job = wait_for_job(response.json()["data"]["jobId"])

    assert job.status == JobStatus.COMPLETED
    delivered = "notifyhub_jobs_delivered_total"
    expected = value(before, delivered, type="webhook") + 1
    assert wait_for_value(delivered, expected, type="webhook") == expected
    after = scrape()
    assert value(after, "notifyhub_jobs_accepted_total", type="webhook") == (
        value(before, "notifyhub_jobs_accepted_total", type="webhook") + 1
    )
    assert attempts(after, "webhook", "success") == attempts(before, "webhook", "success") + 1
    assert value(after, f"{ATTEMPT_SECONDS}_sum", type="webhook", outcome="success") > value(
        before, f"{ATTEMPT_SECONDS}_sum", type="webhook", outcome="success"
    )
    assert value(after, "notifyhub_jobs_failed_total", type="webhook") == value(
        before, "notifyhub_jobs_failed_total", type="webhook"
    )


@pytest.mark.usefixtures("worker")
def test_a_job_that_fails_for_good_is_counted_failed(free: Client, receiver: Receiver) -> None:
    receiver.script("/gone", Reply(status=410))
    before = scrape()

    job = wait_for_job(free.send_webhook(url=receiver.url("/gone")).json()["data"]["jobId"])

    assert job.status == JobStatus.FAILED
    failed = "notifyhub_jobs_failed_total"
    expected = value(before, failed, type="webhook") + 1
    assert wait_for_value(failed, expected, type="webhook") == expected
    assert attempts(scrape(), "webhook", "failed") == attempts(before, "webhook", "failed") + 1


def test_the_queue_is_read_from_the_database_when_scraped(free: Client) -> None:
    jobs = [webhook_job_create(account=free.account, url="https://hooks.example.com/in", payload={}) for _ in range(3)]
    Job.objects.filter(id=jobs[0].id).update(created_at=timezone.now() - timedelta(minutes=5))
    Job.objects.filter(id=jobs[2].id).update(status=JobStatus.COMPLETED, requeue_at=None)

    samples = scrape()

    assert value(samples, "notifyhub_jobs_pending") == 2
    assert 300 <= value(samples, "notifyhub_oldest_pending_job_age_seconds") < 330


def test_a_retried_job_counts_as_pending_but_not_in_the_oldest_age(free: Client) -> None:
    job = webhook_job_create(account=free.account, url="https://hooks.example.com/in", payload={})
    a_day_ago = timezone.now() - timedelta(days=1)
    Job.objects.filter(id=job.id).update(created_at=a_day_ago, started_at=a_day_ago)  # tried before, then retried

    samples = scrape()

    assert value(samples, "notifyhub_jobs_pending") == 1
    assert value(samples, "notifyhub_oldest_pending_job_age_seconds") == 0


def test_requests_are_timed_by_their_route_and_status_never_by_their_path(free: Client) -> None:
    job_id = free.send_webhook().json()["data"]["jobId"]
    job_route = "api/v1/notifications/jobs/<str:job_id>"
    before = scrape()

    for _ in range(2):
        assert free.get(f"/api/v1/notifications/jobs/{job_id}").status_code == 200
    assert free.get("/api/v1/notifications/jobs/not-a-job-id").status_code == 404
    assert APIClient().get("/login/").status_code == 200  # the browser's middleware chain
    assert APIClient().get("/no-such-page/1234").status_code == 404

    after = scrape()
    counted = {
        (route, status): requests_timed(after, route, status) - requests_timed(before, route, status)
        for route, status in [(job_route, 200), (job_route, 404), ("login/", 200), ("unmatched", 404)]
    }
    assert counted == {(job_route, 200): 2, (job_route, 404): 1, ("login/", 200): 1, ("unmatched", 404): 1}
    assert value(after, f"{REQUEST_SECONDS}_bucket", route=job_route, status="200", le="+Inf") >= 2
    routes = {sample.labels["route"] for sample in after if sample.name.startswith(REQUEST_SECONDS)}
    assert not [route for route in routes if job_id in route or "not-a-job-id" in route or "1234" in route]


@pytest.fixture
def metrics_token(settings: Any) -> str:
    settings.METRICS_TOKEN = "m3trics-t0ken"
    return str(settings.METRICS_TOKEN)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_AUTHORIZATION": "Bearer wrong-token"},
        {"HTTP_AUTHORIZATION": "Bearer m3trics-t0ke"},
        {"HTTP_AUTHORIZATION": "Basic m3trics-t0ken"},
        {"HTTP_X_API_KEY": "m3trics-t0ken"},
    ],
    ids=["missing", "wrong", "a-prefix", "not-bearer", "as-api-key"],
)
def test_with_a_token_set_anything_but_that_token_is_refused(
    db: None, metrics_token: str, headers: dict[str, str]
) -> None:
    response = APIClient().get("/metrics", **headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer ")
    assert b"notifyhub_" not in response.content


def test_with_a_token_set_the_token_is_let_in(db: None, metrics_token: str) -> None:
    samples = scrape(HTTP_AUTHORIZATION=f"Bearer {metrics_token}")

    assert value(samples, "notifyhub_jobs_pending") == 0


@pytest.mark.parametrize(
    "remote",
    [
        {"REMOTE_ADDR": "203.0.113.5"},
        {"REMOTE_ADDR": "10.0.0.7"},
        # A proxy on this host forwarding someone else's scrape: it is not a local scraper.
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.5"},
    ],
    ids=["public", "private", "forwarded-by-a-local-proxy"],
)
def test_a_deployment_without_a_token_answers_only_its_own_loopback(
    db: None, settings: Any, remote: dict[str, str]
) -> None:
    settings.EMBEDDED_MODE, settings.METRICS_TOKEN = False, None

    refused = APIClient().get("/metrics", **remote)

    assert refused.status_code == 403
    assert refused.content == b"Without METRICS_TOKEN the metrics are answered only on the loopback interface\n"
    assert value(scrape(REMOTE_ADDR="127.0.0.1"), "notifyhub_jobs_pending") == 0


def test_behind_a_counted_proxy_a_local_client_is_answered_and_a_remote_one_is_not(db: None, settings: Any) -> None:
    settings.EMBEDDED_MODE, settings.METRICS_TOKEN, settings.TRUSTED_PROXY_HOPS = False, None, 1

    remote = APIClient().get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5")

    assert remote.status_code == 403
    assert value(scrape(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1"), "notifyhub_jobs_pending") == 0


def test_an_embedded_run_without_a_token_answers_anyone(db: None, settings: Any) -> None:
    settings.EMBEDDED_MODE, settings.METRICS_TOKEN = True, None

    assert value(scrape(REMOTE_ADDR="203.0.113.5"), "notifyhub_jobs_pending") == 0


COUNT_IN_A_PROCESS = """
import sys

import django

django.setup()
from notifications.observability import ATTEMPT_SECONDS, job_accepted

for _ in range(int(sys.argv[1])):
    job_accepted("webhook")
ATTEMPT_SECONDS["webhook", "success"].observe(0.2)
"""


REQUESTS_IN_A_PROCESS = """
import logging
import sys

import django

django.setup()
from django.test.utils import setup_test_environment

from tests.clients import APIClient

logging.disable(logging.INFO)  # the request lines; a warning would still reach stderr
setup_test_environment()  # the test client's host, testserver, allowed
for _ in range(int(sys.argv[1])):
    assert APIClient().get("/api/v1/info").status_code == 200
"""


def run_counting_process(folder: Path, accepted: int) -> None:
    run_in_a_process(folder, COUNT_IN_A_PROCESS, str(accepted))


def run_in_a_process(folder: Path, script: str, *args: str) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # start-up prints no warning


def test_a_scrape_sums_every_process_sharing_the_folder(db: None, settings: Any, tmp_path: Path) -> None:
    run_counting_process(tmp_path, accepted=2)
    run_counting_process(tmp_path, accepted=3)
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path)

    samples = scrape()

    assert value(samples, "notifyhub_jobs_accepted_total", type="webhook") == 5
    assert value(samples, "notifyhub_jobs_accepted_total", type="email") == 0
    assert attempts(samples, "webhook", "success") == 2
    assert value(samples, f"{ATTEMPT_SECONDS}_bucket", type="webhook", outcome="success", le="0.25") == 2
    assert value(samples, "notifyhub_jobs_pending") == 0  # the queue still comes from the database
    assert not any(sample.name.startswith("process_") for sample in samples)  # only what the files hold


def test_a_scrape_sums_the_request_durations_of_every_process_sharing_the_folder(
    db: None, settings: Any, tmp_path: Path
) -> None:
    run_in_a_process(tmp_path, REQUESTS_IN_A_PROCESS, "2")
    run_in_a_process(tmp_path, REQUESTS_IN_A_PROCESS, "3")
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path)

    samples = scrape()

    assert requests_timed(samples, "api/v1/info", 200) == 5
    assert value(samples, f"{REQUEST_SECONDS}_bucket", route="api/v1/info", status="200", le="+Inf") == 5
