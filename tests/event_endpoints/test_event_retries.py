"""An event delivery's retry too far off to be counted down is left to the sweep, which publishes it a moment before
its time, counted down to it; one seconds away is published at its record, counted down (docs/event-endpoints.md,
"How an event is delivered"). No worker runs here: each test takes the deliveries' tasks from the broker itself."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from event_endpoints.delivery import event_deliveries_sweep, event_delivery_process
from event_endpoints.models import Event, EventDelivery, EventDeliveryStatus, EventEndpoint, EventType
from notifications.engine.queue import LAST_STEP
from tests.conftest import Client
from tests.customer_webhooks.test_delivery import Messages
from tests.fakes.receiver import Receiver, Reply
from tests.retry_schedule import (
    DISPATCH_LEAD,
    assert_counted_down,
    assert_left_to_the_dispatcher,
    assert_published_ahead,
)


def delivery_to(client: Client, receiver: Receiver, path: str) -> EventDelivery:
    endpoint = EventEndpoint.objects.create(account=client.account, url=receiver.url(path), events=["job.completed"])
    event = Event.objects.create(account=client.account, type=EventType.JOB_COMPLETED, data={"id": "job-1"})
    return EventDelivery.objects.create(
        event=event, endpoint=endpoint, requeue_at=timezone.now() + timedelta(minutes=5)
    )


def deliver_event_tasks(broker_messages: Messages) -> list[dict[str, Any]]:
    return [message for message in broker_messages() if message["task"] == "event_endpoints.deliver_event"]


def test_an_event_retry_minutes_away_is_left_to_the_sweep_and_one_seconds_away_is_counted_down(
    free: Client,
    receiver: Receiver,
    delivery_settings: Any,
    broker_messages: Messages,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # 5 s before attempt 2, the longest countdown; 4 min before attempt 3 (the default's second wait), past it.
    delivery_settings.WEBHOOK_RETRY_DELAYS = [5, 240]
    receiver.script("/events", Reply(status=503), Reply(status=503))
    delivery = delivery_to(free, receiver, "/events")

    with django_capture_on_commit_callbacks(execute=True):
        event_delivery_process(delivery_id=delivery.id)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (EventDeliveryStatus.PROCESSING, 1)
    (counted_down,) = deliver_event_tasks(broker_messages)
    assert_counted_down(delivery, counted_down, priority=LAST_STEP)

    EventDelivery.objects.filter(id=delivery.id).update(locked_until=timezone.now())  # its countdown ran out
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        event_delivery_process(delivery_id=delivery.id)

    delivery.refresh_from_db()
    assert deliver_event_tasks(broker_messages) == []
    assert (delivery.status, delivery.attempts) == (EventDeliveryStatus.PROCESSING, 2)
    assert_left_to_the_dispatcher(delivery, recorded_at=before, seconds=240)
    # Not yet due for the sweep: nothing is published, nothing moved.
    assert event_deliveries_sweep() == 0
    assert EventDelivery.objects.get(id=delivery.id).requeue_at == delivery.requeue_at
    assert deliver_event_tasks(broker_messages) == []

    # Its time moved to a second from now, and so its requeue_at: the sweep publishes it, counted down to it.
    due = timezone.now() + timedelta(seconds=1)
    EventDelivery.objects.filter(id=delivery.id).update(
        next_attempt_at=due, locked_until=due, requeue_at=due - DISPATCH_LEAD
    )
    assert event_deliveries_sweep() == 1

    # On the last step, as every event delivery; due for the sweep again after the grace, should the task be lost.
    (published,) = deliver_event_tasks(broker_messages)
    assert_published_ahead(delivery, published, due=due, priority=LAST_STEP)
    time.sleep(max(0.0, (due - timezone.now()).total_seconds()))
    event_delivery_process(delivery_id=delivery.id)

    done = EventDelivery.objects.get(id=delivery.id)
    assert (done.status, done.attempts, done.next_attempt_at, done.requeue_at) == (
        EventDeliveryStatus.COMPLETED,
        3,
        None,
        None,
    )
    assert [arrival.headers["X-Webhook-Attempt"] for arrival in receiver.wait_for(3)] == ["1", "2", "3"]


def test_the_sweep_publishes_a_lost_delivery_at_once_and_due_again_later(
    free: Client, receiver: Receiver, delivery_settings: Any, broker_messages: Messages
) -> None:
    # Pending, its task lost: due for the sweep, published with no countdown, due again JOB_REQUEUE_AFTER_SECONDS on.
    delivery = delivery_to(free, receiver, "/events")
    EventDelivery.objects.filter(id=delivery.id).update(requeue_at=timezone.now() - timedelta(seconds=1))
    before = timezone.now()

    assert event_deliveries_sweep() == 1

    (published,) = deliver_event_tasks(broker_messages)
    assert (published["args"], published["priority"]) == ([str(delivery.id)], LAST_STEP)
    assert "eta" not in published
    requeue_at = EventDelivery.objects.get(id=delivery.id).requeue_at
    assert requeue_at is not None
    assert (requeue_at - before).total_seconds() == pytest.approx(300, abs=1)
