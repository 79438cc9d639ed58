"""Events pushed to the account's endpoints: one signed POST per event and subscribed endpoint, retried as a webhook
job is, never a job itself (docs/event-endpoints.md)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import stripe
from standardwebhooks.webhooks import Webhook

from accounts.services import signing_secret_generate
from event_endpoints.models import Event, EventDelivery, EventDeliveryStatus
from notifications.models import Job
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Arrival, Receiver, Reply
from tests.notifications.test_webhook_delivery import send

pytestmark = pytest.mark.usefixtures("worker")


def subscribe(client: Client, receiver: Receiver, *events: str, path: str = "/events") -> str:
    response = client.post("/api/v1/event-endpoints", {"url": receiver.url(path), "events": list(events)})
    assert response.status_code == 201, response.json()
    return str(response.json()["data"]["id"])


def arrivals_at(receiver: Receiver, path: str, count: int, timeout: float = 15.0) -> list[Arrival]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        arrived = [arrival for arrival in receiver.arrivals if arrival.path == path]
        if len(arrived) >= count:
            return arrived
        time.sleep(0.05)
    return [arrival for arrival in receiver.arrivals if arrival.path == path]


def wait_for_deliveries(
    endpoint_id: str, *statuses: str, count: int, timeout: float = 15.0, **filters: Any
) -> list[EventDelivery]:
    deadline = time.monotonic() + timeout
    while True:
        deliveries = list(EventDelivery.objects.filter(endpoint_id=endpoint_id, status__in=statuses, **filters))
        if len(deliveries) >= count or time.monotonic() > deadline:
            return deliveries
        time.sleep(0.05)


def body_of(arrival: Arrival) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(arrival.body)
    return parsed


def test_a_completed_job_pushes_one_signed_event_both_libraries_verify(free: Client, receiver: Receiver) -> None:
    secret = signing_secret_generate(account=free.account)
    endpoint_id = subscribe(free, receiver, "job.completed", "job.failed")

    job_id = send(free, receiver, "/hook")
    wait_for_job(job_id)

    (arrival,) = arrivals_at(receiver, "/events", 1)
    event = body_of(arrival)
    assert event["type"] == "job.completed"
    assert event["data"]["id"] == job_id
    assert event["data"]["status"] == "completed"
    assert event["data"]["attempts"] == 1
    assert event["data"]["completedAt"] is not None
    assert set(event) == {"id", "type", "createdAt", "data"}
    assert arrival.headers["X-Webhook-Id"] == arrival.headers["webhook-id"] == event["id"]
    assert stripe.WebhookSignature.verify_header(
        arrival.body.decode(), arrival.headers["X-Webhook-Signature"], secret, tolerance=300
    )
    standard = {name: arrival.headers[name] for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    assert Webhook(secret).verify(arrival.body, standard) == event
    (delivery,) = wait_for_deliveries(endpoint_id, EventDeliveryStatus.COMPLETED, count=1)
    assert (delivery.attempts, delivery.response_status, str(delivery.event_id)) == (1, 200, event["id"])
    time.sleep(0.5)  # nothing more comes: one event per change
    assert len(arrivals_at(receiver, "/events", 2, timeout=0)) == 1


def test_a_failed_job_pushes_job_failed_and_only_subscribed_types_arrive(free: Client, receiver: Receiver) -> None:
    secret = signing_secret_generate(account=free.account)
    receiver.script("/hook", Reply(status=404))
    subscribe(free, receiver, "job.failed", path="/failures")
    subscribe(free, receiver, "job.completed", path="/successes")

    failed_id = send(free, receiver, "/hook")
    wait_for_job(failed_id)

    (arrival,) = arrivals_at(receiver, "/failures", 1)
    assert body_of(arrival)["type"] == "job.failed"
    assert body_of(arrival)["data"]["id"] == failed_id
    assert body_of(arrival)["data"]["errorMessage"] == "404 Not Found"
    assert stripe.WebhookSignature.verify_header(
        arrival.body.decode(), arrival.headers["X-Webhook-Signature"], secret, tolerance=300
    )
    standard = {name: arrival.headers[name] for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    assert Webhook(secret).verify(arrival.body, standard) == body_of(arrival)
    time.sleep(0.5)
    assert arrivals_at(receiver, "/successes", 1, timeout=0) == []


def test_event_deliveries_are_not_jobs_and_spend_no_quota(free: Client, receiver: Receiver) -> None:
    subscribe(free, receiver, "job.completed")
    job_id = send(free, receiver, "/hook")
    wait_for_job(job_id)
    arrivals_at(receiver, "/events", 1)

    assert list(Job.objects.filter(account=free.account).values_list("id", flat=True)) == [Job.objects.get().id]
    listed = free.get("/api/v1/notifications/jobs").json()["data"]
    assert [job["id"] for job in listed["data"]] == [job_id]
    assert free.get("/api/v1/user/usage").json()["data"]["used"] == 1


def test_a_deleted_endpoint_receives_nothing_more(free: Client, receiver: Receiver) -> None:
    endpoint_id = subscribe(free, receiver, "job.completed")
    assert free.delete(f"/api/v1/event-endpoints/{endpoint_id}").json()["data"] == {
        "id": endpoint_id,
        "message": "Event endpoint deleted",
    }

    wait_for_job(send(free, receiver, "/hook"))

    time.sleep(0.5)
    assert arrivals_at(receiver, "/events", 1, timeout=0) == []
    assert not Event.objects.filter(account=free.account).exists()


def test_an_endpoint_answering_500_is_retried_and_its_deliveries_page_says_so(free: Client, receiver: Receiver) -> None:
    receiver.script("/events", Reply(status=500), Reply(status=503))
    endpoint_id = subscribe(free, receiver, "job.completed")

    wait_for_job(send(free, receiver, "/hook"))

    first = arrivals_at(receiver, "/events", 1)[0]
    # Processing with an attempt recorded: waiting for its retry, not still in the first attempt.
    retrying = wait_for_deliveries(endpoint_id, EventDeliveryStatus.PROCESSING, count=1, attempts__gte=1)
    page = free.get(f"/api/v1/event-endpoints/{endpoint_id}/deliveries").json()["data"]
    (shown,) = page["data"]
    assert retrying[0].attempts >= 1
    assert shown["status"] in ("processing", "completed")
    if shown["status"] == "processing":
        assert shown["lastError"] in ("500 Internal Server Error", "503 Service Unavailable")
        assert shown["nextAttemptAt"] is not None
    arrivals = arrivals_at(receiver, "/events", 3)
    (done,) = wait_for_deliveries(endpoint_id, EventDeliveryStatus.COMPLETED, count=1)
    assert [arrival.headers["X-Webhook-Attempt"] for arrival in arrivals] == ["1", "2", "3"]
    assert {arrival.headers["X-Webhook-Id"] for arrival in arrivals} == {first.headers["X-Webhook-Id"]}
    assert (done.attempts, done.response_status, done.error_message) == (3, 200, None)
    finished = free.get(f"/api/v1/event-endpoints/{endpoint_id}/deliveries").json()["data"]["data"][0]
    assert (finished["status"], finished["attempts"], finished["type"]) == ("completed", 3, "job.completed")
    assert finished["eventId"] == first.headers["X-Webhook-Id"]


def test_an_endpoint_answering_4xx_fails_the_delivery_at_once(free: Client, receiver: Receiver) -> None:
    receiver.answer_always("/events", Reply(status=410))
    endpoint_id = subscribe(free, receiver, "job.completed")

    wait_for_job(send(free, receiver, "/hook"))

    (failed,) = wait_for_deliveries(endpoint_id, EventDeliveryStatus.FAILED, count=1)
    assert (failed.attempts, failed.response_status, failed.error_message) == (1, 410, "410 Gone")
    assert len(arrivals_at(receiver, "/events", 1)) == 1
