"""What the client does with real deliveries: ``jobs.wait`` until the worker has delivered, and ``verify_webhook`` and
``parse_event`` on what arrived at a receiver (tests/fakes/receiver.py), signed in both schemes by the account's
secret (docs/delivery-engine.md, "Webhooks")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from accounts.services import signing_secret_generate
from core.signing import signature_header, standard_signature_header
from tests.client.hubs import Hub
from tests.client.sdk import notifyhub
from tests.conftest import Client
from tests.fakes.receiver import Arrival, Receiver

pytestmark = pytest.mark.usefixtures("worker")

STANDARD = ("webhook-id", "webhook-timestamp", "webhook-signature")
NOTIFYHUB = ("X-Webhook-Id", "X-Webhook-Timestamp", "X-Webhook-Signature")
TEN_MINUTES = 600


@pytest.fixture
def secret(holder: Client) -> str:
    return signing_secret_generate(account=holder.account)


@pytest.fixture
def nh(holder: Client, live_server: Any) -> Iterator[Any]:
    """The sync client, for the tests about what arrived rather than about the client's transport."""
    with notifyhub.NotifyHub(holder.api_key, base_url=live_server.url) as client:
        yield client


def deliver(client: Any, receiver: Receiver, payload: dict[str, Any]) -> Arrival:
    accepted = client.webhooks.send(url=receiver.url("/hook"), payload=payload)
    (arrival,) = receiver.wait_for(1)
    assert arrival.headers["X-Webhook-Id"] == accepted.job_id
    # Recorded as delivered, not only arrived: an attempt that crashed reading the receiver's answer would be retried.
    assert client.jobs.wait(accepted.job_id, timeout=15).status == "completed"
    return arrival


def only(arrival: Arrival, scheme: tuple[str, ...]) -> dict[str, str]:
    return {name: arrival.headers[name] for name in scheme}


def replayed(arrival: Arrival, scheme: tuple[str, ...], secret: str) -> dict[str, str]:
    """The delivery's headers signed right with ``secret``, ten minutes ago."""
    signed_at = int(time.time()) - TEN_MINUTES
    message_id = arrival.headers["X-Webhook-Id"]
    if scheme == STANDARD:
        signature = standard_signature_header(secret, message_id, signed_at, arrival.body)
        return {"webhook-id": message_id, "webhook-timestamp": str(signed_at), "webhook-signature": signature}
    signature = signature_header(secret, signed_at, arrival.body)
    return {"X-Webhook-Id": message_id, "X-Webhook-Timestamp": str(signed_at), "X-Webhook-Signature": signature}


def verifies(secret: str, headers: dict[str, str], body: bytes) -> bool:
    try:
        notifyhub.verify_webhook(secret, headers, body)
    except notifyhub.WebhookVerificationError:
        return False
    return True


def test_wait_returns_the_job_once_delivered(hub: Hub, receiver: Receiver) -> None:
    accepted = hub.run(lambda client: client.webhooks.send(url=receiver.url("/hook"), payload={"order": 7}))

    job = hub.run(lambda client: client.jobs.wait(accepted.job_id, timeout=15))

    assert (job.status, job.attempts) == ("completed", 1)
    assert [(log.status, log.response_status) for log in job.delivery_logs] == [("success", 200)]
    assert len(receiver.arrivals) == 1


def test_wait_gives_up_after_its_timeout_with_the_job_as_last_read(hub: Hub) -> None:
    in_an_hour = datetime.now(UTC) + timedelta(hours=1)
    scheduled = hub.run(
        lambda client: client.webhooks.send(url="https://hooks.example.com/in", payload={}, send_at=in_an_hour)
    )

    with pytest.raises(notifyhub.WaitTimeoutError) as gave_up:
        hub.run(lambda client: client.jobs.wait(scheduled.job_id, timeout=0.3))

    assert (gave_up.value.job.id, gave_up.value.job.status) == (scheduled.job_id, "pending")


@pytest.mark.parametrize("scheme", [STANDARD, NOTIFYHUB], ids=["standard-webhooks", "notifyhub"])
def test_a_real_delivery_verifies_in_each_scheme_with_the_secret_and_the_one_it_replaced(
    scheme: tuple[str, ...], nh: Any, receiver: Receiver, holder: Client, secret: str
) -> None:
    rotated = signing_secret_generate(account=holder.account)  # the previous secret signs beside it for a day

    arrival = deliver(nh, receiver, {"order": 7})

    assert notifyhub.verify_webhook(rotated, only(arrival, scheme), arrival.body) == {"order": 7}
    assert notifyhub.verify_webhook(secret, only(arrival, scheme), arrival.body.decode()) == {"order": 7}


@pytest.mark.parametrize("scheme", [STANDARD, NOTIFYHUB], ids=["standard-webhooks", "notifyhub"])
def test_an_altered_body_another_secret_or_a_replay_is_refused(
    scheme: tuple[str, ...], nh: Any, receiver: Receiver, secret: str
) -> None:
    arrival = deliver(nh, receiver, {"amount": 10})
    headers = only(arrival, scheme)
    other_secret = "whsec_" + "ab" * 32

    refusals = {
        "altered": (secret, headers, arrival.body.replace(b"10", b"99")),
        "another secret": (other_secret, headers, arrival.body),
        "replayed": (secret, replayed(arrival, scheme, secret), arrival.body),
        "unsigned": (secret, {"Content-Type": "application/json"}, arrival.body),
    }

    assert [case for case, (key, sent_headers, body) in refusals.items() if verifies(key, sent_headers, body)] == []
    assert notifyhub.verify_webhook(secret, replayed(arrival, scheme, secret), arrival.body, tolerance=TEN_MINUTES + 5)


def test_the_id_is_verified_only_where_a_signature_covers_it(nh: Any, receiver: Receiver, secret: str) -> None:
    arrival = deliver(nh, receiver, {"order": 7})
    job_id = arrival.headers["X-Webhook-Id"]
    forged = {**arrival.headers, "X-Webhook-Id": "00000000-0000-4000-8000-000000000000"}
    stripped = {name: value for name, value in forged.items() if not name.lower().startswith("webhook-")}

    both = notifyhub.verify_delivery(secret, forged, arrival.body)
    ours_only = notifyhub.verify_delivery(secret, stripped, arrival.body)

    assert (both.payload, both.id, both.scheme) == ({"order": 7}, job_id, "standard-webhooks")
    assert (ours_only.payload, ours_only.id, ours_only.scheme) == ({"order": 7}, None, "notifyhub")
    assert not verifies(secret, {**arrival.headers, "webhook-id": forged["X-Webhook-Id"]}, arrival.body)


def test_parse_event_reads_a_real_event_endpoint_delivery(nh: Any, receiver: Receiver, secret: str) -> None:
    endpoint = nh.event_endpoints.create(url=receiver.url("/events"), events=["job.completed"])
    job_id = nh.webhooks.send(url=receiver.url("/hook"), payload={}).job_id

    (event_arrival,) = [arrival for arrival in receiver.wait_for(2) if arrival.path == "/events"]
    event = notifyhub.parse_event(secret, event_arrival.headers, event_arrival.body)

    assert isinstance(event, notifyhub.Event)
    assert (event.id, event.type) == (event_arrival.headers["X-Webhook-Id"], "job.completed")
    assert (event.data["id"], event.data["status"]) == (job_id, "completed")
    (delivery,) = nh.event_endpoints.deliveries(endpoint.id)
    assert delivery.event_id == event.id
