"""A retry never sends twice: through the proxy in front of the live service (proxy.py), each refused, lost or
hung attempt, and what the client sent again, seen at the proxy and in the database."""

from __future__ import annotations

import time

import pytest

from notifications.models import Job
from tests.client.conftest import Connect
from tests.client.proxy import Proxy, hang, lose_answer, refuse
from tests.client.sdk import notifyhub
from tests.conftest import Client

URL = "https://hooks.example.com/in"
SEND_PATH = "/api/v1/notifications/webhook"


def sent_keys(proxy: Proxy) -> list[str]:
    return [seen.json()["idempotencyKey"] for seen in proxy.seen if seen.path == SEND_PATH]


def stored_jobs(holder: Client, *, count: int, timeout: float = 5.0) -> int:
    """The account's jobs, once there are ``count`` or the time is up: the proxy may still be forwarding."""
    deadline = time.monotonic() + timeout
    while (stored := Job.objects.filter(account=holder.account).count()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return stored


def test_a_send_refused_with_429_waits_out_retry_after_and_is_stored_once_under_its_key(
    connect: Connect, holder: Client, proxy: Proxy
) -> None:
    proxy.script(refuse(429, retry_after="1"))
    hub = connect(holder.api_key, base_url=proxy.url)

    started = time.monotonic()
    accepted = hub.run(lambda nh: nh.webhooks.send(url=URL, payload={"n": 1}))

    assert time.monotonic() - started >= 1
    first, second = sent_keys(proxy)
    assert first == second
    (job,) = Job.objects.filter(account=holder.account)
    assert (str(job.id), job.idempotency_key) == (accepted.job_id, first)


def test_a_429_from_a_window_filled_elsewhere_is_asked_again_within_a_second_not_a_minute_later(
    connect: Connect, holder: Client, proxy: Proxy
) -> None:
    """The key's window was filled by requests this client never saw, and lifts at once: the client asks again on
    the backoff's first step (0.5 to 0.625 s), where it waited the whole minute."""
    proxy.script(refuse(429))
    hub = connect(holder.api_key, base_url=proxy.url)

    started = time.monotonic()
    pong = hub.run(lambda nh: nh.ping())

    assert 0.5 <= time.monotonic() - started < 2
    assert pong.message == "pong"
    assert [seen.path for seen in proxy.seen] == ["/api/v1/ping", "/api/v1/ping"]


def test_a_send_refused_with_503_is_sent_again_and_stored_once(connect: Connect, holder: Client, proxy: Proxy) -> None:
    proxy.script(refuse(503, retry_after="0"))
    hub = connect(holder.api_key, base_url=proxy.url)

    accepted = hub.run(lambda nh: nh.webhooks.send(url=URL, payload={"n": 1}, idempotency_key="mine"))

    assert sent_keys(proxy) == ["mine", "mine"]
    assert list(Job.objects.filter(account=holder.account).values_list("id", flat=True)) == [
        Job.objects.get(id=accepted.job_id).id
    ]


def test_a_send_stored_whose_answer_was_lost_is_not_stored_again(
    connect: Connect, holder: Client, proxy: Proxy
) -> None:
    proxy.script(lose_answer(503))
    hub = connect(holder.api_key, base_url=proxy.url)

    with pytest.raises(notifyhub.ConflictError) as refused:
        hub.run(lambda nh: nh.webhooks.send(url=URL, payload={"n": 1}))

    assert refused.value.code == "duplicate_request"
    first, second = sent_keys(proxy)
    assert first == second
    assert Job.objects.filter(account=holder.account, idempotency_key=first).count() == 1


def test_a_batch_sent_again_keeps_each_items_key(connect: Connect, holder: Client, proxy: Proxy) -> None:
    proxy.script(refuse(503, retry_after="0"))
    hub = connect(holder.api_key, base_url=proxy.url)

    result = hub.run(lambda nh: nh.webhooks.send_batch([{"url": URL, "payload": {"n": n}} for n in range(3)]))

    first, second = ([item["idempotencyKey"] for item in seen.json()["items"]] for seen in proxy.seen)
    assert first == second
    assert len(set(first)) == 3
    assert Job.objects.filter(account=holder.account).count() == len(result.items) == 3


def test_a_send_whose_answer_never_came_is_not_sent_again(connect: Connect, holder: Client, proxy: Proxy) -> None:
    proxy.script(hang(forward=True))
    hub = connect(holder.api_key, base_url=proxy.url, timeout=0.5)

    with pytest.raises(notifyhub.APITimeoutError):
        hub.run(lambda nh: nh.webhooks.send(url=URL, payload={"n": 1}))

    assert len(proxy.seen) == 1
    assert stored_jobs(holder, count=1) == 1  # it reached NotifyHub: sent again, it would be a duplicate


def test_a_read_whose_answer_never_came_is_read_again(connect: Connect, holder: Client, proxy: Proxy) -> None:
    proxy.script(hang(forward=False))
    hub = connect(holder.api_key, base_url=proxy.url, timeout=0.5)

    assert hub.run(lambda nh: nh.ping()).message == "pong"
    assert [seen.path for seen in proxy.seen] == ["/api/v1/ping", "/api/v1/ping"]


def test_a_send_whose_connection_was_refused_is_sent_once_the_server_listens(
    connect: Connect, holder: Client, live_server: object
) -> None:
    proxy = Proxy(live_server.url)  # type: ignore[attr-defined]
    proxy.start(after=0.25)  # the first attempt is refused; the first retry waits at least 0.5 s
    try:
        hub = connect(holder.api_key, base_url=proxy.url)
        accepted = hub.run(lambda nh: nh.webhooks.send(url=URL, payload={"n": 1}))
    finally:
        proxy.stop()

    assert len(proxy.seen) == 1
    assert [str(job.id) for job in Job.objects.filter(account=holder.account)] == [accepted.job_id]


def test_no_retries_are_made_when_max_retries_is_0(connect: Connect, holder: Client, proxy: Proxy) -> None:
    proxy.script(refuse(429, retry_after="0"))
    hub = connect(holder.api_key, base_url=proxy.url, max_retries=0)

    with pytest.raises(notifyhub.RateLimitError):
        hub.run(lambda nh: nh.ping())

    assert len(proxy.seen) == 1


def test_a_retry_after_longer_than_the_rate_window_is_not_waited_out(
    connect: Connect, holder: Client, proxy: Proxy
) -> None:
    proxy.script(refuse(503, retry_after="3600"))
    hub = connect(holder.api_key, base_url=proxy.url)

    with pytest.raises(notifyhub.ServiceUnavailableError):
        hub.run(lambda nh: nh.ping())

    assert len(proxy.seen) == 1
