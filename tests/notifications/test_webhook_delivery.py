from __future__ import annotations

import re
import time
from typing import Any

import pytest
import stripe
import trustme

from accounts.services import signing_secret_generate
from core.signing import verify_signature
from notifications.models import Job, JobStatus
from notifications.services import webhook_job_create
from tests.conftest import Client, free_port, wait_for_job, worker_idle
from tests.fakes.receiver import Receiver, Reply

pytestmark = pytest.mark.usefixtures("worker")


def send(client: Client, receiver: Receiver, path: str = "/hook", **fields: Any) -> str:
    response = client.send_webhook(url=receiver.url(path), **fields)
    assert response.status_code == 202, response.json()
    return response.json()["data"]["jobId"]


def test_it_delivers_the_payload_with_our_headers(free: Client, receiver: Receiver) -> None:
    job_id = send(free, receiver, payload={"event": "signup", "name": "Zoë"}, headers={"X-Trace": "t-1"})

    job = wait_for_job(job_id)

    (arrival,) = receiver.wait_for(1)
    assert arrival.method == "POST"
    assert arrival.path == "/hook"
    assert arrival.body == '{"event":"signup","name":"Zoë"}'.encode()
    assert arrival.headers["Content-Type"] == "application/json"
    assert arrival.headers["User-Agent"] == "NotifyHub/1.0"
    assert arrival.headers["X-Trace"] == "t-1"
    assert arrival.headers["X-Webhook-Id"] == job_id
    assert arrival.headers["X-Webhook-Attempt"] == "1"
    assert "X-Webhook-Signature" not in arrival.headers
    assert (job.status, job.attempts, job.error_message) == (JobStatus.COMPLETED, 1, None)
    assert job.started_at is not None
    assert job.completed_at is not None
    assert job.finished_at == job.completed_at
    (log,) = job.delivery_logs.all()
    assert (log.attempt, log.status, log.used_provider, log.response_status) == (1, "success", None, 200)
    assert log.response_excerpt == '{"ok":true}'
    assert log.duration_ms is not None


def test_get_job_status_shows_the_delivery(free: Client, receiver: Receiver) -> None:
    job_id = send(free, receiver)
    wait_for_job(job_id)

    data = free.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]

    assert data["status"] == "completed"
    assert data["completedAt"] is not None
    assert data["startedAt"] is not None
    assert [(log["attempt"], log["status"], log["usedProvider"]) for log in data["deliveryLogs"]] == [
        (1, "success", None)
    ]


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_it_uses_the_jobs_method(free: Client, receiver: Receiver, method: str) -> None:
    wait_for_job(send(free, receiver, method=method))

    assert receiver.wait_for(1)[0].method == method


def test_custom_headers_cannot_replace_the_delivery_headers(free: Client, receiver: Receiver) -> None:
    signing_secret_generate(account=free.account)
    headers = {"x-webhook-signature": "forged", "X-Webhook-Id": "forged", "X-Webhook-Timestamp": "1"}

    wait_for_job(send(free, receiver, headers=headers))

    arrival = receiver.wait_for(1)[0]
    assert arrival.headers["X-Webhook-Signature"] != "forged"
    assert arrival.headers["X-Webhook-Id"] != "forged"
    assert arrival.headers["X-Webhook-Timestamp"] != "1"


def test_a_4xx_fails_at_once_without_retry(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=404, body=b"no such hook"))

    job = wait_for_job(send(free, receiver))

    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 1, "404 Not Found")
    (log,) = job.delivery_logs.all()
    assert (log.status, log.response_status, log.response_excerpt) == ("failed", 404, "no such hook")
    assert (job.completed_at, job.finished_at) == (None, log.created_at)
    time.sleep(1.5)
    assert len(receiver.arrivals) == 1


def test_a_5xx_is_retried_until_it_succeeds(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=503), Reply(status=502))

    job_id = send(free, receiver)
    waiting = wait_for_job(job_id, "processing")
    job = wait_for_job(job_id)

    assert waiting.status == JobStatus.PROCESSING
    assert (job.status, job.attempts, job.error_message) == (JobStatus.COMPLETED, 3, None)
    logs = list(job.delivery_logs.order_by("created_at"))
    assert [(log.attempt, log.status, log.error_message) for log in logs] == [
        (1, "failed", "503 Service Unavailable"),
        (2, "failed", "502 Bad Gateway"),
        (3, "success", None),
    ]
    arrivals = receiver.wait_for(3)
    assert [a.headers["X-Webhook-Attempt"] for a in arrivals] == ["1", "2", "3"]
    # WEBHOOK_RETRY_DELAYS is [1, 2] here.
    assert arrivals[1].at - arrivals[0].at >= 0.9
    assert arrivals[2].at - arrivals[1].at >= 1.9


def test_a_waiting_retry_shows_next_attempt_at(free: Client, receiver: Receiver, delivery_settings: Any) -> None:
    delivery_settings.WEBHOOK_RETRY_DELAYS = [30, 30]
    receiver.script("/hook", Reply(status=500))
    job_id = send(free, receiver)
    receiver.wait_for(1)
    time.sleep(0.3)

    data = free.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]

    assert data["status"] == "processing"
    assert data["attempts"] == 1
    assert data["errorMessage"] == "500 Internal Server Error"
    assert data["nextAttemptAt"] is not None


def test_three_failures_fail_the_job(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=500), Reply(status=500), Reply(status=500))

    job = wait_for_job(send(free, receiver))

    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 3, "500 Internal Server Error")
    assert job.delivery_logs.count() == 3


def test_a_refused_connection_is_retried_with_a_clear_message(free: Client, delivery_settings: Any) -> None:
    delivery_settings.WEBHOOK_RETRY_DELAYS = [0, 0]
    response = free.send_webhook(url=f"https://127.0.0.1:{free_port()}/hook")

    job = wait_for_job(response.json()["data"]["jobId"])

    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 3, "Connection refused")


def test_a_timeout_is_retried_with_a_clear_message(free: Client, receiver: Receiver, delivery_settings: Any) -> None:
    delivery_settings.WEBHOOK_RETRY_DELAYS = [0, 0]
    receiver.script("/hook", Reply(delay=3), Reply(delay=3), Reply(delay=3))

    job = wait_for_job(send(free, receiver), timeout=30)

    assert (job.status, job.attempts, job.error_message) == (JobStatus.FAILED, 3, "Timed out after 2s")


def test_an_untrusted_certificate_is_a_tls_error(free: Client, delivery_settings: Any) -> None:
    delivery_settings.WEBHOOK_RETRY_DELAYS = [0, 0]
    with Receiver(trustme.CA()) as stranger:
        job = wait_for_job(send(free, stranger))

    assert (job.status, job.error_message) == (JobStatus.FAILED, "TLS error: certificate verify failed")
    assert stranger.arrivals == []


def test_redirects_are_not_followed(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=302))

    job = wait_for_job(send(free, receiver))

    assert (job.status, job.error_message) == (JobStatus.FAILED, "302 Found (redirects are not followed)")


def test_loopback_targets_are_refused_in_production_mode_without_naming_the_address(
    free: Client, receiver: Receiver, delivery_settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    delivery_settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    # Created through the service: the API already refuses such URLs (see test_webhook_ssrf).
    job = webhook_job_create(account=free.account, url=f"https://localhost:{receiver.port}/hook", payload={})

    job = wait_for_job(job.id)

    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    (log,) = job.delivery_logs.all()
    data = free.get(f"/api/v1/notifications/jobs/{job.id}").json()["data"]
    for shown in (job.error_message, log.error_message, data["errorMessage"], data["deliveryLogs"][0]["errorMessage"]):
        assert shown == "Refused: the URL resolves to a non-public address"
    assert "127.0.0.1" not in str(data)
    assert "::1" not in str(data)
    assert receiver.arrivals == []
    # Operators still learn where the name led.
    assert re.search(r"Refused a webhook to localhost: it resolves to (127\.0\.0\.1|::1)", caplog.text)


def test_signed_deliveries_verify_with_stripe_and_our_helper(free: Client, receiver: Receiver) -> None:
    secret = signing_secret_generate(account=free.account)

    wait_for_job(send(free, receiver, payload={"amount": 12.5, "tags": ["a", "b"]}))

    arrival = receiver.wait_for(1)[0]
    header = arrival.headers["X-Webhook-Signature"]
    timestamp = arrival.headers["X-Webhook-Timestamp"]
    assert header.startswith(f"t={timestamp},v1=")
    assert abs(int(timestamp) - time.time()) < 10
    assert stripe.WebhookSignature.verify_header(arrival.body.decode(), header, secret, tolerance=300)
    assert verify_signature(secret, header, arrival.body)
    assert not verify_signature("whsec_other", header, arrival.body)


def test_retry_job_delivers_again_and_keeps_the_old_logs(free: Client, receiver: Receiver) -> None:
    receiver.script("/hook", Reply(status=410))
    job_id = send(free, receiver)
    assert wait_for_job(job_id).status == JobStatus.FAILED

    response = free.post(f"/api/v1/notifications/jobs/{job_id}/retry")
    job = wait_for_job(job_id, "completed")

    assert response.status_code == 200
    assert (job.status, job.attempts) == (JobStatus.COMPLETED, 1)
    logs = list(job.delivery_logs.order_by("created_at"))
    assert [(log.attempt, log.status) for log in logs] == [(1, "failed"), (1, "success")]
    assert len(receiver.wait_for(2)) == 2


def test_the_worker_fixture_waits_for_the_attempt_under_way_to_be_recorded(free: Client, receiver: Receiver) -> None:
    # The receiver records the request, then answers a second later: the attempt is under way, not yet recorded.
    receiver.answer_always("/slow", Reply(delay=1.0))
    job_id = send(free, receiver, "/slow")
    receiver.wait_for(1)
    assert Job.objects.get(id=job_id).status == JobStatus.PROCESSING

    assert worker_idle(timeout=10)

    assert Job.objects.get(id=job_id).status == JobStatus.COMPLETED
