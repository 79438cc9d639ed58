"""Endpoint health: failed webhook attempts in a row at one destination, told once per streak as endpoint.failing and
by email to the holder at most once a day; a success ends the streak (docs/event-endpoints.md, "Endpoint health")."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from accounts.plans import Plan
from notifications.models import DestinationHealth
from notifications.selectors import destination_states
from tests.conftest import Client, wait_for_job
from tests.event_endpoints.test_event_delivery import arrivals_at, subscribe
from tests.fakes.receiver import Receiver, Reply
from tests.notifications.test_webhook_delivery import send

pytestmark = pytest.mark.usefixtures("worker")

FAILING_SUBJECT = "Webhooks to https://127.0.0.1:{port} are failing"


def fail_times(client: Client, receiver: Receiver, count: int) -> None:
    """``count`` webhooks that each fail at once (410 is final): one failed attempt each, one after the other, each
    counted at the destination before the next is sent. The worker counts an attempt once it has recorded the job's
    state, which is what wait_for_job sees."""
    counted = streak_of(client)
    for _ in range(count):
        wait_for_job(send(client, receiver, "/gone"))
        counted += 1
        wait_for_streak(client, lambda streak, counted=counted: streak >= counted)


def succeed_once(client: Client, receiver: Receiver) -> None:
    """A webhook to the same host that answers (the destination is the host), once it has ended the streak."""
    wait_for_job(send(client, receiver, "/hook"))
    wait_for_streak(client, lambda streak: streak == 0)


def wait_for_streak(client: Client, reached: Callable[[int], bool]) -> None:
    deadline = time.monotonic() + 5.0
    while not reached(streak_of(client)) and time.monotonic() < deadline:
        time.sleep(0.02)


def streak_of(client: Client) -> int:
    health = DestinationHealth.objects.filter(account=client.account, destination="127.0.0.1").first()
    return 0 if health is None else health.consecutive_failures


def health_of(client: Client) -> DestinationHealth:
    return DestinationHealth.objects.get(account=client.account, destination="127.0.0.1")


def alerts(receiver: Receiver, expected: int, timeout: float = 10.0) -> list[Any]:
    """The alert emails about ``receiver``, once ``expected`` of them have come or ``timeout`` has passed: the worker
    sends each on its last priority step, after the event deliveries a test waits for."""
    subject = FAILING_SUBJECT.format(port=receiver.port)
    deadline = time.monotonic() + timeout
    while True:
        sent = [message for message in mail.outbox if message.subject == subject]
        if len(sent) >= expected or time.monotonic() > deadline:
            return sent
        time.sleep(0.05)


@pytest.fixture
def gone(receiver: Receiver, settings: Any) -> Receiver:
    settings.ENDPOINT_FAILING_THRESHOLD = 5
    receiver.answer_always("/gone", Reply(status=410))
    return receiver


def test_five_failures_in_a_row_emit_one_endpoint_failing_and_one_email(startup: Client, gone: Receiver) -> None:
    subscribe(startup, gone, "endpoint.failing")

    fail_times(startup, gone, 4)
    assert health_of(startup).consecutive_failures == 4
    assert not health_of(startup).announced
    fail_times(startup, gone, 3)

    (arrival,) = arrivals_at(gone, "/events", 1)
    event = json.loads(arrival.body)
    assert event["type"] == "endpoint.failing"
    assert event["data"]["url"] == f"https://127.0.0.1:{gone.port}"
    assert event["data"]["consecutiveFailures"] == 5
    assert event["data"]["lastError"] == "410 Gone"
    assert event["data"]["since"] is not None
    health = health_of(startup)
    assert (health.consecutive_failures, health.announced) == (7, True)
    (email,) = alerts(gone, 1)
    assert email.to == [startup.account.user.email]
    body = email.alternatives[0][0] if email.alternatives else email.body
    assert "410 Gone" in body
    assert "/dashboard/endpoints/" in body
    assert len(arrivals_at(gone, "/events", 2, timeout=0.5)) == 1  # once per streak


def test_a_success_ends_the_streak_and_the_next_streak_is_told_again_but_not_emailed(
    startup: Client, gone: Receiver
) -> None:
    subscribe(startup, gone, "endpoint.failing")
    fail_times(startup, gone, 5)
    arrivals_at(gone, "/events", 1)
    # The email goes out on the worker's last priority step, and is dropped when a success has ended the streak
    # by then: the success below waits for it.
    assert len(alerts(gone, 1)) == 1

    succeed_once(startup, gone)
    ended = health_of(startup)
    fail_times(startup, gone, 5)

    assert (ended.consecutive_failures, ended.failing_since, ended.announced) == (0, None, False)
    assert [json.loads(a.body)["data"]["consecutiveFailures"] for a in arrivals_at(gone, "/events", 2)] == [5, 5]
    assert len(alerts(gone, 2, timeout=2.0)) == 1  # at most once a day for one destination


def test_the_email_goes_again_a_day_after_the_last(startup: Client, gone: Receiver) -> None:
    fail_times(startup, gone, 5)
    DestinationHealth.objects.filter(account=startup.account).update(
        alerted_at=timezone.now() - timedelta(days=1, seconds=1), announced=False, consecutive_failures=0
    )

    fail_times(startup, gone, 5)

    assert len(alerts(gone, 2)) == 2


def test_another_accounts_failures_count_apart(make_client: Any, gone: Receiver) -> None:
    mine, theirs = make_client(Plan.STARTUP), make_client(Plan.STARTUP)
    fail_times(mine, gone, 3)
    fail_times(theirs, gone, 2)

    assert health_of(mine).consecutive_failures == 3
    assert health_of(theirs).consecutive_failures == 2


def test_the_endpoints_page_figures_count_the_last_day_per_destination(startup: Client, gone: Receiver) -> None:
    succeed_once(startup, gone)
    fail_times(startup, gone, 5)

    (state,), total = destination_states(account=startup.account, now=timezone.now(), page=1, limit=25)

    assert total == 1
    assert (state.destination, state.attempts, state.succeeded, state.failing) == ("127.0.0.1", 6, 1, True)
    assert state.success_rate == pytest.approx(1 / 6)
    assert state.median_ms is not None
    assert state.health is not None
    assert state.health.last_error == "410 Gone"
