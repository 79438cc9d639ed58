"""A message's deliveries are webhook jobs the engine sends to their endpoints as they are now: signed with the
endpoint's secrets, under the message's id, retried on MESSAGE_RETRY_DELAYS, paced by the endpoint's rate limit, and
the endpoint disabled when it answers 410 or keeps failing (docs/customer-webhooks.md)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.core.cache import cache
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from accounts.services import signing_secret_generate
from core.crypto import encrypt
from core.pacing import GO_NOW, RedisPacer
from customer_webhooks.models import App, Endpoint, Message
from event_endpoints.models import Event
from notifications.engine.processing import job_process, jobs_dispatch, jobs_sweep
from notifications.engine.queue import BROKER_PRIORITY, jobs_enqueue
from notifications.models import Job, JobStatus, JobType
from tests.conftest import Client, free_port, wait_for_job
from tests.event_endpoints.test_event_delivery import arrivals_at, subscribe
from tests.factories import ENDPOINT_SECRET, AppFactory, EndpointFactory
from tests.fakes.receiver import Arrival, Receiver, Reply
from tests.retry_schedule import (
    DISPATCH_LEAD,
    assert_counted_down,
    assert_left_to_the_dispatcher,
    assert_published_ahead,
)

# A secret a rotation replaced, still signing beside ENDPOINT_SECRET.
OLD_SECRET = "whsec_" + "b2xkLXNlY3JldC1mb3ItdGVzdHMtMDEyMzQ1Njc4OQ=="
PAYLOAD = {"invoice": "in_1", "amount": 12.5, "note": "naïve"}
Messages = Callable[[], list[dict[str, Any]]]


def app_of(client: Client) -> App:
    # Its holder's once-a-day email about disabled endpoints is not spent: the cache outlives a test database.
    cache.delete(f"disabled-endpoint-alert:{client.account.id}")
    return AppFactory(account=client.account, uid="customer-1")


def endpoint_at(app: App, receiver: Receiver, path: str, **fields: Any) -> Endpoint:
    return EndpointFactory(app=app, url=receiver.url(path), **fields)


def deliveries(app: App, *endpoints: Endpoint, published: bool = True) -> tuple[Message, list[Job]]:
    """A message and one delivery job per endpoint, as the messages API stores them, their tasks published unless a
    test runs them itself."""
    message = Message.objects.create(account=app.account, app=app, event_type="invoice.paid", payload=PAYLOAD)
    jobs = [
        Job.objects.create(
            account=app.account,
            type=JobType.WEBHOOK,
            message=message,
            endpoint=endpoint,
            payload={"url": endpoint.url, "method": "POST", "payload": message.payload, "eventType": "invoice.paid"},
            destination="127.0.0.1",
            max_attempts=8,
            requeue_at=timezone.now() + timedelta(minutes=5),
        )
        for endpoint in endpoints
    ]
    if published:
        jobs_enqueue([(job.id, job.priority) for job in jobs])
    return message, jobs


def verifies(secret: str, arrival: Arrival) -> bool:
    try:
        Webhook(secret).verify(arrival.body, arrival.headers)
    except WebhookVerificationError:
        return False
    return True


def signatures(arrival: Arrival) -> Sequence[str]:
    return arrival.headers["webhook-signature"].split()


@pytest.mark.usefixtures("worker")
def test_a_delivery_is_the_payload_signed_with_the_endpoint_secret_never_the_account_one(
    free: Client, receiver: Receiver
) -> None:
    account_secret = signing_secret_generate(account=free.account)
    app = app_of(free)
    message, (job,) = deliveries(app, endpoint_at(app, receiver, "/a"))

    assert wait_for_job(job.id).status == JobStatus.COMPLETED
    (arrival,) = receiver.wait_for(1)
    assert arrival.body == '{"invoice":"in_1","amount":12.5,"note":"naïve"}'.encode()
    assert arrival.headers["webhook-id"] == arrival.headers["X-Webhook-Id"] == str(message.id)
    assert len(signatures(arrival)) == 1
    assert verifies(ENDPOINT_SECRET, arrival)
    assert Webhook(ENDPOINT_SECRET).verify(arrival.body, arrival.headers) == PAYLOAD
    assert not verifies(account_secret, arrival)


@pytest.mark.usefixtures("worker")
def test_an_endpoint_without_a_secret_gets_it_unsigned_not_signed_with_the_account_secret(
    free: Client, receiver: Receiver
) -> None:
    signing_secret_generate(account=free.account)
    app = app_of(free)
    _, (job,) = deliveries(app, endpoint_at(app, receiver, "/a", encrypted_secret=""))

    assert wait_for_job(job.id).status == JobStatus.COMPLETED
    (arrival,) = receiver.wait_for(1)
    assert "webhook-signature" not in arrival.headers
    assert "X-Webhook-Signature" not in arrival.headers


@pytest.mark.usefixtures("worker")
def test_the_message_id_is_the_webhook_id_on_every_endpoint_and_every_attempt(
    free: Client, receiver: Receiver, settings: Any
) -> None:
    settings.MESSAGE_RETRY_DELAYS = [1]
    receiver.script("/a", Reply(status=503))
    app = app_of(free)
    message, jobs = deliveries(app, endpoint_at(app, receiver, "/a"), endpoint_at(app, receiver, "/b"))

    assert [wait_for_job(job.id).status for job in jobs] == [JobStatus.COMPLETED] * 2
    at_a, at_b = arrivals_at(receiver, "/a", 2), arrivals_at(receiver, "/b", 1)
    assert len(at_a) == 2
    assert [arrival.headers["X-Webhook-Attempt"] for arrival in at_a] == ["1", "2"]
    for arrival in [*at_a, *at_b]:
        assert arrival.headers["webhook-id"] == arrival.headers["X-Webhook-Id"] == str(message.id)
        assert verifies(ENDPOINT_SECRET, arrival)


@pytest.mark.usefixtures("worker")
def test_during_a_rotation_overlap_both_secrets_sign(free: Client, receiver: Receiver) -> None:
    app = app_of(free)
    endpoint = endpoint_at(
        app,
        receiver,
        "/a",
        previous_encrypted_secret=encrypt(OLD_SECRET),
        previous_signs_until=timezone.now() + timedelta(hours=1),
    )
    _, (job,) = deliveries(app, endpoint)

    wait_for_job(job.id)
    (arrival,) = receiver.wait_for(1)
    assert len(signatures(arrival)) == 2
    assert verifies(ENDPOINT_SECRET, arrival)
    assert verifies(OLD_SECRET, arrival)


@pytest.mark.usefixtures("worker")
def test_a_previous_secret_past_its_overlap_signs_no_more(free: Client, receiver: Receiver) -> None:
    app = app_of(free)
    endpoint = endpoint_at(
        app,
        receiver,
        "/a",
        previous_encrypted_secret=encrypt(OLD_SECRET),
        previous_signs_until=timezone.now() - timedelta(seconds=1),
    )
    _, (job,) = deliveries(app, endpoint)

    wait_for_job(job.id)
    (arrival,) = receiver.wait_for(1)
    assert len(signatures(arrival)) == 1
    assert not verifies(OLD_SECRET, arrival)


@pytest.mark.usefixtures("worker")
def test_a_retry_goes_to_the_url_the_endpoint_has_now(free: Client, receiver: Receiver, settings: Any) -> None:
    settings.MESSAGE_RETRY_DELAYS = [1]
    receiver.script("/old", Reply(status=503))
    app = app_of(free)
    endpoint = endpoint_at(app, receiver, "/old")
    _, (job,) = deliveries(app, endpoint)
    assert len(arrivals_at(receiver, "/old", 1)) == 1

    Endpoint.objects.filter(id=endpoint.id).update(url=receiver.url("/new"))

    assert wait_for_job(job.id).status == JobStatus.COMPLETED
    assert len(arrivals_at(receiver, "/new", 1)) == 1
    assert len(arrivals_at(receiver, "/old", 1)) == 1
    assert Job.objects.get(id=job.id).payload["url"] == receiver.url("/old")


@pytest.mark.usefixtures("worker")
def test_a_disabled_endpoint_gets_no_request_and_the_delivery_fails_for_good(free: Client, receiver: Receiver) -> None:
    app = app_of(free)
    _, (job,) = deliveries(app, endpoint_at(app, receiver, "/a", disabled=True))

    done = wait_for_job(job.id)

    assert (done.status, done.attempts, done.error_message) == (JobStatus.FAILED, 1, "Endpoint disabled")
    assert done.delivery_logs.get().response_status is None
    assert receiver.arrivals == []


@pytest.mark.usefixtures("worker")
def test_an_endpoint_whose_name_resolves_to_a_private_address_is_refused_when_the_delivery_connects(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    delivery_settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    app = app_of(free)
    # Stored as the API would store a public name that later resolves to a private address (the API refuses
    # `localhost` itself, and literal private addresses, when the endpoint is added).
    _, (job,) = deliveries(app, EndpointFactory(app=app, url=f"https://localhost:{receiver.port}/a"))

    done = wait_for_job(job.id)

    assert (done.status, done.attempts) == (JobStatus.FAILED, 1)
    assert done.error_message == "Refused: the URL resolves to a non-public address"
    assert receiver.arrivals == []


@pytest.mark.usefixtures("worker")
def test_410_gone_disables_the_endpoint_and_announces_it(startup: Client, receiver: Receiver) -> None:
    subscribe(startup, receiver, "endpoint.disabled")
    receiver.answer_always("/gone", Reply(status=410))
    app = app_of(startup)
    endpoint = endpoint_at(app, receiver, "/gone")
    _, (job,) = deliveries(app, endpoint)

    done = wait_for_job(job.id)

    assert (done.status, done.attempts, done.error_message) == (JobStatus.FAILED, 1, "410 Gone")
    assert wait_for_endpoint(endpoint, disabled=True).disabled_reason == "gone"
    (event,) = Event.objects.filter(account=startup.account, type="endpoint.disabled")
    expected = {"appId": str(app.id), "appUid": "customer-1", "endpointId": str(endpoint.id), "reason": "gone"}
    assert event.data == {**expected, "url": receiver.url("/gone")}
    (arrival,) = arrivals_at(receiver, "/events", 1)
    assert b'"endpoint.disabled"' in arrival.body
    (email,) = emails_about(endpoint, expected=1)
    assert "answered 410 Gone" in email.body


@pytest.mark.usefixtures("worker")
def test_an_endpoint_failing_past_the_window_is_disabled_and_a_success_ends_the_run(
    free: Client, receiver: Receiver, settings: Any
) -> None:
    settings.ENDPOINT_DISABLE_AFTER_SECONDS = 1
    settings.MESSAGE_RETRY_DELAYS = [2]
    receiver.script("/a", Reply(status=500), Reply(status=200))
    receiver.answer_always("/down", Reply(status=500))
    app = app_of(free)
    recovering, down = endpoint_at(app, receiver, "/a"), endpoint_at(app, receiver, "/down")

    _, (first,) = deliveries(app, recovering)
    assert wait_for_endpoint(recovering, failing=True).failing_since is not None
    assert wait_for_job(first.id).status == JobStatus.COMPLETED
    assert wait_for_endpoint(recovering, failing=False).disabled is False

    # Attempt 2, 2 s after the first failure, disables it; attempt 3 finds it disabled.
    _, (doomed,) = deliveries(app, down)
    assert wait_for_endpoint(down, disabled=True).disabled_reason == "failing"
    done = wait_for_job(doomed.id)
    assert (done.status, done.attempts, done.error_message) == (JobStatus.FAILED, 3, "Endpoint disabled")
    (email,) = emails_about(down, expected=1)
    assert "every delivery to it has failed since" in email.body

    _, (after,) = deliveries(app, down)
    assert wait_for_job(after.id).error_message == "Endpoint disabled"
    assert len(arrivals_at(receiver, "/down", 3, timeout=1)) == 2
    assert emails_about(down, expected=2, timeout=1) == [email]


def test_a_message_delivery_retries_8_times_on_message_retry_delays(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    delivery_settings.MESSAGE_RETRY_DELAYS = [5, 300, 1800, 7200, 18000, 36000, 36000]
    receiver.answer_always("/busy", Reply(status=429, headers={"Retry-After": "60"}))
    receiver.script("/busy", Reply(status=503), Reply(status=408), Reply(status=425))
    app = app_of(free)
    _, (job,) = deliveries(app, endpoint_at(app, receiver, "/busy"), published=False)

    waits = []
    for _ in range(8):
        before = timezone.now()
        job_process(job_id=job.id)
        job.refresh_from_db()
        if job.next_attempt_at is not None:
            waits.append(round((job.next_attempt_at - before).total_seconds()))
            Job.objects.filter(id=job.id).update(locked_until=timezone.now())

    assert waits == [5, 300, 1800, 7200, 18000, 36000, 36000]
    assert (job.status, job.attempts, job.max_attempts, job.error_message) == ("failed", 8, 8, "429 Too Many Requests")
    assert [arrival.headers["X-Webhook-Attempt"] for arrival in receiver.wait_for(8)] == [str(n) for n in range(1, 9)]


def test_retry_after_is_honoured_on_a_429_and_other_4xx_end_the_delivery(
    free: Client, receiver: Receiver, delivery_settings: Any
) -> None:
    delivery_settings.MESSAGE_RETRY_DELAYS = [5]
    receiver.script("/busy", Reply(status=429, headers={"Retry-After": "120"}))
    receiver.answer_always("/refused", Reply(status=422))
    app = app_of(free)
    busy_at, refused_at = endpoint_at(app, receiver, "/busy"), endpoint_at(app, receiver, "/refused")
    _, (busy, refused) = deliveries(app, busy_at, refused_at, published=False)

    before = timezone.now()
    job_process(job_id=busy.id)
    job_process(job_id=refused.id)

    busy.refresh_from_db()
    refused.refresh_from_db()
    assert busy.status == JobStatus.PROCESSING
    assert busy.next_attempt_at is not None
    assert round((busy.next_attempt_at - before).total_seconds()) == 120
    assert (refused.status, refused.attempts, refused.error_message) == ("failed", 1, "422 Unprocessable Entity")


@pytest.mark.redis
@pytest.mark.usefixtures("worker")
def test_a_rate_limited_endpoint_is_paced_across_workers_and_blocks_no_other(free: Client, receiver: Receiver) -> None:
    app = app_of(free)
    limited, other = endpoint_at(app, receiver, "/limited", rate_limit=5), endpoint_at(app, receiver, "/other")

    _, paced = deliveries(app, *[limited] * 20)
    _, unpaced = deliveries(app, *[other] * 10)

    at_other = arrivals_at(receiver, "/other", 10)
    at_limited = arrivals_at(receiver, "/limited", 20, timeout=20)
    done = [wait_for_job(job.id) for job in [*paced, *unpaced]]
    assert {(job.status, job.attempts, job.claims) for job in done} == {(JobStatus.COMPLETED, 1, 1)}
    times = sorted(arrival.at for arrival in at_limited)
    assert len(times) == 20
    # Queued behind the 20, the other endpoint's deliveries wait for their claims (each handed back at once), not for
    # their turns: all are in while the limited endpoint's last turn is still to come.
    assert max(arrival.at for arrival in at_other) < times[-1]
    assert times[-1] - times[0] >= 3.5
    assert max(in_any_second(times)) <= 6  # 5 granted in any second; the requests take a few ms each


@pytest.mark.redis
@pytest.mark.usefixtures("worker")
def test_messages_deliveries_to_a_rate_limited_endpoint_go_out_at_their_turns_each_claimed_once(
    startup: Client, receiver: Receiver
) -> None:
    # Stored with their turns (tests/customer_webhooks/test_messages_api.py): no worker takes one up before it.
    app = app_of(startup)
    limited, other = endpoint_at(app, receiver, "/limited", rate_limit=5), endpoint_at(app, receiver, "/other")

    message = {"eventType": "invoice.paid", "payload": PAYLOAD}
    sent = [startup.post(f"/api/v1/apps/{app.id}/messages", message) for _ in range(6)]

    assert [response.status_code for response in sent] == [202] * 6
    at_limited = sorted(arrival.at for arrival in arrivals_at(receiver, "/limited", 6))
    at_other = arrivals_at(receiver, "/other", 6)
    done = [wait_for_job(job.id) for job in Job.objects.filter(endpoint__in=[limited, other])]
    assert {(job.status, job.attempts, job.claims) for job in done} == {(JobStatus.COMPLETED, 1, 1)}
    # 5 a second: the last 1 s after the first (the requests take a few ms each); the other endpoint's not kept
    # behind them.
    assert at_limited[-1] - at_limited[0] >= 0.9
    assert max(in_any_second(at_limited)) <= 6
    assert max(arrival.at for arrival in at_other) < at_limited[-1]


def deliver_tasks(broker_messages: Messages) -> list[dict[str, Any]]:
    """The delivery tasks on the broker: another test's announcing task, published by its process's thread a moment
    after that test asked for it (notifications/outcomes.py), may land there too."""
    return [message for message in broker_messages() if message["task"] == "notifications.deliver_job"]


def in_any_second(times: Sequence[float]) -> list[int]:
    """How many of ``times`` fall in the second that starts at each of them."""
    return [sum(1 for other in times if start <= other < start + 1) for start in times]


@pytest.mark.redis
def test_a_long_wait_for_a_turn_is_left_to_the_dispatcher_not_held_by_a_worker_as_a_countdown(
    free: Client, receiver: Receiver, delivery_settings: Any, broker_messages: Messages
) -> None:
    # Turns one a second: the 7th delivery's is 6 s away, past the longest countdown (5 s). With the default
    # dispatcher's tick of 1 s, it is due for the dispatcher 2 s before its turn.
    app = app_of(free)
    slow = endpoint_at(app, receiver, "/slow", rate_limit=1)
    _, jobs = deliveries(app, *[slow] * 7, published=False)

    for job in jobs:
        job_process(job_id=job.id)

    assert len(receiver.wait_for(1)) == 1
    counted_down = deliver_tasks(broker_messages)
    # Waits of 1 to 5 s: each task on the first step, counted down to its turn; none for the 7th.
    assert [(m["task"], m["args"], m["priority"]) for m in counted_down] == [
        ("notifications.deliver_job", [str(job.id)], 0) for job in jobs[1:6]
    ]
    assert all("eta" in m for m in counted_down)
    last = Job.objects.get(id=jobs[6].id)
    assert (last.status, last.attempts, last.claims) == (JobStatus.PENDING, 0, 0)
    assert last.locked_until is not None
    assert last.requeue_at == last.locked_until - timedelta(seconds=2)
    assert (last.locked_until - timezone.now()).total_seconds() == pytest.approx(5.9, abs=0.3)

    assert jobs_dispatch() == 0
    time.sleep((last.requeue_at - timezone.now()).total_seconds() + 0.05)
    assert jobs_dispatch() == 1

    # On the first step, counted down to its turn from 2 s before it: the claim comes then, not behind the queue.
    (published,) = deliver_tasks(broker_messages)
    assert (published["args"], published["priority"]) == ([str(last.id)], 0)
    assert published["eta"] == pytest.approx(last.locked_until, abs=timedelta(seconds=0.1))


def test_a_retry_minutes_away_is_left_to_the_dispatcher_and_one_seconds_away_is_counted_down(
    free: Client,
    receiver: Receiver,
    delivery_settings: Any,
    broker_messages: Messages,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # The default waits: 5 s before attempt 2, the longest countdown; 5 min before attempt 3, past it.
    delivery_settings.MESSAGE_RETRY_DELAYS = [5, 300, 1800]
    receiver.script("/down", Reply(status=503), Reply(status=503))
    app = app_of(free)
    _, (job,) = deliveries(app, endpoint_at(app, receiver, "/down"), published=False)

    with django_capture_on_commit_callbacks(execute=True):
        job_process(job_id=job.id)

    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 1)
    (counted_down,) = deliver_tasks(broker_messages)
    assert_counted_down(job, counted_down, priority=BROKER_PRIORITY[job.priority])

    Job.objects.filter(id=job.id).update(locked_until=timezone.now())  # its countdown ran out
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        job_process(job_id=job.id)

    job.refresh_from_db()
    assert deliver_tasks(broker_messages) == []
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 2)
    assert_left_to_the_dispatcher(job, recorded_at=before, seconds=300)
    # Waiting, it is no lost task to the sweeper (nothing queued), nor due for the dispatcher.
    assert jobs_sweep() == 0
    assert Job.objects.get(id=job.id).requeue_at == job.requeue_at
    assert deliver_tasks(broker_messages) == []

    # Its time moved to a second from now, and so its requeue_at: the dispatcher publishes it, counted down to it.
    due = timezone.now() + timedelta(seconds=1)
    Job.objects.filter(id=job.id).update(next_attempt_at=due, locked_until=due, requeue_at=due - DISPATCH_LEAD)
    assert jobs_dispatch() == 1

    # On the first step; due for the dispatcher again as a retry published at its record is, after the grace.
    (published,) = deliver_tasks(broker_messages)
    assert_published_ahead(job, published, due=due, priority=0)
    time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
    job_process(job_id=job.id)

    done = Job.objects.get(id=job.id)
    assert (done.status, done.attempts, done.next_attempt_at, done.requeue_at) == (JobStatus.COMPLETED, 3, None, None)
    assert [arrival.headers["X-Webhook-Attempt"] for arrival in receiver.wait_for(3)] == ["1", "2", "3"]


def test_pacing_lets_everything_through_while_redis_is_down_and_says_so_once(caplog: Any) -> None:
    pacer = RedisPacer(f"redis://127.0.0.1:{free_port()}/0")

    with caplog.at_level(logging.WARNING, logger="core.pacing"):
        turns = [pacer.turn("endpoint:x", f"job-{n}", per_second=1) for n in range(3)]

    assert turns == [GO_NOW] * 3
    assert pacer.reserve("endpoint:x", "job-3", per_second=1) is None  # its worker asks for its turn then
    assert len([record for record in caplog.records if "Pacing store unavailable" in record.message]) == 1


def wait_for_endpoint(endpoint: Endpoint, *, timeout: float = 10.0, **state: bool) -> Endpoint:
    """The endpoint once it is ``disabled`` and/or ``failing`` (failing_since set) as asked, or at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        endpoint.refresh_from_db()
        now = {"disabled": endpoint.disabled, "failing": endpoint.failing_since is not None}
        if all(now[name] == wanted for name, wanted in state.items()) or time.monotonic() > deadline:
            return endpoint
        time.sleep(0.05)


def emails_about(endpoint: Endpoint, *, expected: int, timeout: float = 10.0) -> list[Any]:
    subject = f"Webhook endpoint {endpoint.url} disabled"
    deadline = time.monotonic() + timeout
    while True:
        sent = [message for message in mail.outbox if message.subject == subject]
        if len(sent) >= expected or time.monotonic() > deadline:
            return sent
        time.sleep(0.05)
