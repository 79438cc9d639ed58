"""Batches of sends: each item checked alone and answered in its slot, the accepted ones stored together
(docs/rules.md, "Batches")."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from accounts.models import Account, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import usage_get
from event_endpoints.services import endpoint_create
from notifications.engine.processing import jobs_dispatch
from notifications.models import DeliveryLog, Job, JobAnnouncement, JobStatus
from suppressions.models import Suppression
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import EMAIL, WEBHOOK, Client, done_elsewhere, wait_for_job
from tests.fakes.receiver import Receiver

EMAIL_BATCH = "/api/v1/notifications/email/batch"
WEBHOOK_BATCH = "/api/v1/notifications/webhook/batch"
Messages = Callable[[], list[dict[str, Any]]]
SIZE_MESSAGE = "items must hold 1 to 100 notifications"


def _hook(n: int, **fields: Any) -> dict[str, Any]:
    return {**WEBHOOK, "payload": {"n": n}, **fields}


def _items(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 202, response.json()
    items: list[dict[str, Any]] = response.json()["data"]["items"]
    return items


def _used(client: Client) -> int:
    return usage_get(account=client.account).used


def _dispatched(broker_messages: Messages) -> list[str]:
    """The jobs whose tasks go out: the batch asks the broker for one run of the dispatcher, whose run sends them."""
    assert broker_messages() == [{"task": "notifications.dispatch_jobs", "args": [], "priority": 0}]
    jobs_dispatch()
    messages = broker_messages()
    assert {(message["task"], message["priority"]) for message in messages} == {("notifications.deliver_job", 5)}
    return sorted(job_id for message in messages for job_id in message["args"])


def _refused(status: int, error: str, code: str) -> dict[str, Any]:
    return {"status": status, "error": error, "code": code}


def test_a_webhook_batch_stores_every_item_in_order_and_has_the_dispatcher_send_them_once_committed(
    startup: Client, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        items = _items(startup.post(WEBHOOK_BATCH, {"items": [_hook(n) for n in range(3)]}))

    assert [item["status"] for item in items] == ["pending"] * 3
    assert all(set(item) == {"jobId", "status", "type", "createdAt"} and item["type"] == "webhook" for item in items)
    jobs = [Job.objects.get(id=item["jobId"]) for item in items]
    assert [job.payload["payload"] for job in jobs] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert _used(startup) == 3
    assert len({job.requeue_at for job in jobs}) == 1
    assert jobs[0].requeue_at <= timezone.now()  # due at once
    assert _dispatched(broker_messages) == sorted(item["jobId"] for item in items)
    shown = startup.get(f"/api/v1/notifications/jobs/{items[1]['jobId']}").json()["data"]
    assert (shown["status"], shown["payload"]["payload"]) == ("pending", {"n": 1})


def test_each_refused_item_gets_the_single_sends_answer_in_its_slot(startup: Client) -> None:
    startup.send_webhook(idempotencyKey="stored-before")
    too_far = (timezone.now() + timedelta(days=31)).isoformat()
    bodies: list[Any] = [
        _hook(0),
        {**WEBHOOK, "url": "http://hooks.example.com/in"},
        "not an object",
        _hook(3, idempotencyKey="stored-before"),
        _hook(4, idempotencyKey="twice"),
        _hook(5, idempotencyKey="twice"),
        _hook(6, sendAt=too_far),
        {"payload": {}},
        _hook(8, priority=7),
    ]

    items = _items(startup.post(WEBHOOK_BATCH, {"items": bodies}))

    singles = {n: startup.post("/api/v1/notifications/webhook", bodies[n]).json() for n in (1, 6, 7, 8)}
    assert [item.get("status") for item in items] == ["pending", 400, 400, 409, "pending", 409, 400, 400, 400]
    assert items[1] == _refused(400, singles[1]["error"], "validation_failed")
    assert singles[1]["error"] == "url must be a valid HTTPS URL"
    assert items[2] == _refused(400, "Each item must be a JSON object", "validation_failed")
    duplicate = _refused(409, "Duplicate request detected", "duplicate_request")
    assert items[3] == items[5] == duplicate
    assert items[6] == _refused(400, "sendAt must be within 30 days", "validation_failed")
    assert items[7] == _refused(400, singles[7]["error"], "validation_failed")
    assert items[8] == _refused(400, singles[8]["error"], "validation_failed")
    assert Job.objects.get(id=items[4]["jobId"]).idempotency_key == "twice"
    assert Job.objects.filter(account=startup.account, idempotency_key="twice").count() == 1
    assert _used(startup) == 1 + 2 + 0  # the send before, the two accepted items; the singles were all refused


def test_an_email_batch_refuses_what_the_account_may_not_send_item_by_item(free: Client) -> None:
    items = _items(
        free.post(
            EMAIL_BATCH,
            {"items": [EMAIL, {**EMAIL, "provider": "SENDGRID"}, {**EMAIL, "from": "me@elsewhere.com"}, {**EMAIL}]},
        )
    )

    routing = free.send_email(provider="SENDGRID").json()
    sender = free.send_email(**{"from": "me@elsewhere.com"}).json()
    assert [item["status"] for item in items] == ["pending", 403, 400, "pending"]
    assert items[1] == _refused(403, routing["error"], routing["code"])
    assert items[2] == _refused(400, sender["error"], sender["code"])
    assert {item["type"] for item in (items[0], items[3])} == {"email"}


@pytest.mark.parametrize(
    "body",
    [{"items": []}, {"items": [_hook(n) for n in range(101)]}, {"items": _hook(0)}, {"items": None}, {}],
    ids=["empty", "101 items", "an object", "null", "missing"],
)
def test_a_batch_that_is_not_a_list_of_1_to_100_items_is_refused_whole(startup: Client, body: Any) -> None:
    assert_error(startup.post(WEBHOOK_BATCH, body), 400, SIZE_MESSAGE, "validation_failed")
    assert_error(startup.post(EMAIL_BATCH, body), 400, SIZE_MESSAGE, "validation_failed")
    assert not Job.objects.filter(account=startup.account).exists()


def test_an_item_with_an_unknown_field_is_refused_in_its_slot_and_the_others_accepted(free: Client) -> None:
    items = _items(free.post(EMAIL_BATCH, {"items": [EMAIL, {**EMAIL, "colour": "teal"}, EMAIL]}))

    single = free.send_email(colour="teal").json()
    assert [item["status"] for item in items] == ["pending", 400, "pending"]
    assert items[1] == _refused(400, "Unknown field: colour", "unknown_field")
    assert items[1] == _refused(400, single["error"], single["code"])
    assert Job.objects.filter(account=free.account).count() == 2


@pytest.mark.parametrize("items", [[_hook(0)], []], ids=["valid items", "no items"])
def test_a_batch_body_with_an_unknown_field_is_refused_whole_before_its_items(startup: Client, items: Any) -> None:
    body = {"items": items, "colour": "teal"}

    assert_error(startup.post(WEBHOOK_BATCH, body), 400, "Unknown field: colour", "unknown_field")
    assert_error(startup.post(EMAIL_BATCH, body), 400, "Unknown field: colour", "unknown_field")
    assert not Job.objects.filter(account=startup.account).exists()


def test_a_batch_body_that_is_not_an_object_is_refused_as_any_body_is(startup: Client) -> None:
    assert_error(startup.post(WEBHOOK_BATCH, [_hook(0)]), 400, "Request body must be a JSON object", "body_not_object")


def test_a_batch_of_100_is_accepted(startup: Client, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True) as after_commit:
        items = _items(startup.post(WEBHOOK_BATCH, {"items": [_hook(n) for n in range(100)]}))

    assert len({item["jobId"] for item in items}) == 100
    assert Job.objects.filter(account=startup.account, status=JobStatus.PENDING).count() == 100
    assert len(after_commit) == 1  # one callback: the dispatcher's task


def test_the_quota_must_cover_the_whole_batch_or_nothing_is_stored(make_client: Callable[..., Client]) -> None:
    client = make_client(Plan.FREE, monthly_limit=5)
    assert client.send_webhook().status_code == 202

    refused = client.post(WEBHOOK_BATCH, {"items": [_hook(n) for n in range(5)]})

    assert_error(
        refused,
        403,
        f"Monthly usage limit exceeded (1/5). Upgrade your plan or wait for reset on {_reset_day(client)}.",
        "quota_exceeded",
    )
    assert Job.objects.filter(account=client.account).count() == 1
    assert _used(client) == 1
    # Refused items spend nothing, so they do not count against the batch.
    items = _items(client.post(WEBHOOK_BATCH, {"items": [*[_hook(n) for n in range(4)], {"payload": {}}]}))
    assert [item["status"] for item in items] == ["pending"] * 4 + [400]
    assert _used(client) == 5


def _reset_day(client: Client) -> str:
    resets_on = usage_get(account=client.account).resets_on
    return f"{resets_on.month}/{resets_on.day}/{resets_on.year}"


def test_a_batch_is_one_request_against_the_rate_limit(free: Client) -> None:
    assert len(_items(free.post(WEBHOOK_BATCH, {"items": [_hook(n) for n in range(3)]}))) == 3
    for _ in range(4):  # the Free plan's 5 a minute: the batch took one
        assert free.send_webhook().status_code == 202

    assert_error(free.post(WEBHOOK_BATCH, {"items": [_hook(0)]}), 429, "Rate limit exceeded", "rate_limited")


def test_a_suppressed_address_in_a_batch_fails_on_arrival_in_its_slot_and_takes_its_unit(
    free: Client, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    Suppression.objects.create(account=free.account, email="gone@example.com", reason="bounce")

    with django_capture_on_commit_callbacks(execute=True):
        items = _items(free.post(EMAIL_BATCH, {"items": [EMAIL, {**EMAIL, "to": "Gone@Example.com"}]}))

    single = free.send_email(to="gone@example.com").json()["data"]
    assert [item["status"] for item in items] == ["pending", "failed"]
    failed = Job.objects.get(id=items[1]["jobId"])
    log = DeliveryLog.objects.get(job=failed)
    assert (failed.status, failed.attempts, failed.error_message) == ("failed", 1, log.error_message)
    assert log.error_message == Job.objects.get(id=single["jobId"]).error_message
    assert _used(free) == 3  # the batch's two items and the single send: a suppressed send takes its unit
    assert _dispatched(broker_messages) == [items[0]["jobId"]]


def test_a_suppressed_address_in_a_batch_is_announced_to_the_accounts_event_endpoints(free: Client) -> None:
    endpoint_create(account=free.account, url="https://events.example.com/in", events=["job.failed"])
    free.account = Account.objects.get(pk=free.account.pk)
    Suppression.objects.create(account=free.account, email="gone@example.com", reason="complaint")

    items = _items(free.post(EMAIL_BATCH, {"items": [{**EMAIL, "to": "gone@example.com"}, EMAIL]}))

    announced = JobAnnouncement.objects.get()
    assert (str(announced.job_id), announced.status) == (items[0]["jobId"], "failed")


def test_a_scheduled_item_waits_for_its_time_and_the_others_go_now(
    startup: Client, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    send_at = timezone.now() + timedelta(hours=1)

    with django_capture_on_commit_callbacks(execute=True):
        items = _items(startup.post(WEBHOOK_BATCH, {"items": [_hook(0, sendAt=send_at.isoformat()), _hook(1)]}))

    scheduled = Job.objects.get(id=items[0]["jobId"])
    assert (scheduled.scheduled_for, scheduled.locked_until) == (send_at, send_at)
    assert _dispatched(broker_messages) == [items[1]["jobId"]]


def test_a_batch_may_be_larger_than_a_single_sends_body(startup: Client) -> None:
    text = "x" * 9000  # ten webhooks of 9 KB each, 90 KB: past a single send's limit below, within a batch's
    with override_settings(API_MAX_BODY_BYTES=64 * 1024, API_MAX_BATCH_BODY_BYTES=128 * 1024):
        assert startup.send_webhook(payload={"text": text * 8}).status_code == 413
        items = _items(startup.post(WEBHOOK_BATCH, {"items": [_hook(n, payload={"text": text}) for n in range(10)]}))
        assert len(items) == 10
        too_large = startup.post(WEBHOOK_BATCH, {"items": [_hook(n, payload={"t": text}) for n in range(15)]})
    assert_error(too_large, 413, "Request body must be at most 128 KB", "payload_too_large")


@pytest.mark.usefixtures("worker")
def test_a_batchs_webhooks_are_delivered_once_each(startup: Client, receiver: Receiver) -> None:
    items = _items(startup.post(WEBHOOK_BATCH, {"items": [_hook(n, url=receiver.url("/hook")) for n in range(5)]}))

    arrived = receiver.wait_for(5)
    assert sorted(json.loads(arrival.body)["n"] for arrival in arrived) == [0, 1, 2, 3, 4]
    assert {wait_for_job(item["jobId"]).status for item in items} == {JobStatus.COMPLETED}


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite takes one writer at a time: no race to run")
def test_a_key_taken_by_a_concurrent_send_is_refused_in_its_slot_and_the_rest_stored(startup: Client) -> None:
    answers: list[Any] = []
    body = {"items": [_hook(0), _hook(1, idempotencyKey="raced"), _hook(2, idempotencyKey="free")]}

    def send_batch() -> None:
        try:
            answers.append(APIClient().post(WEBHOOK_BATCH, body, format="json", HTTP_X_API_KEY=startup.api_key))
        finally:
            connection.close()

    batch = threading.Thread(target=send_batch)
    # Another send holds the key, not yet committed: the batch's read does not see it, its INSERT waits for it.
    with done_elsewhere(
        lambda: Job.objects.create(account=startup.account, type="webhook", payload={}, idempotency_key="raced")
    ):
        batch.start()
        deadline = time.monotonic() + 10
        while not _waiting_on_a_lock():
            assert time.monotonic() < deadline
            time.sleep(0.02)
    batch.join(10)

    items = _items(answers[0])
    assert [item["status"] for item in items] == ["pending", 409, "pending"]
    assert Job.objects.filter(account=startup.account).count() == 3  # the other send's, and two of the batch's
    assert UsagePeriod.objects.get(account=startup.account).used == 2
