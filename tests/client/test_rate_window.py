"""How long the client waits after a 429 without ``Retry-After`` (NotifyHub's never has one): at the latest until the
oldest request of its rolling minute is a minute old (docs/rules.md, "Limits"), or a minute after its first refusal
when none of its own are in it, and sooner on the backoff's steps while retries are left, on a clock the test turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace

import httpx
import pytest

from tests.client.sdk import notifyhub

RateWindow = notifyhub._retry.RateWindow
RetryPolicy = notifyhub._retry.RetryPolicy
retry_after = notifyhub._retry.retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def answered(status: int) -> SimpleNamespace:
    return SimpleNamespace(status_code=status)


def test_a_slot_comes_back_when_the_oldest_answered_request_is_a_minute_old() -> None:
    clock = Clock()
    window = RateWindow(clock)
    for _ in range(3):
        window.note(answered(200))
        clock.now += 10
    window.note(answered(429))  # a refused request is not counted

    assert window.until_capacity() == pytest.approx(30)


def test_requests_older_than_the_minute_no_longer_count() -> None:
    clock = Clock()
    window = RateWindow(clock)
    window.note(answered(200))
    clock.now += 50
    window.note(answered(201))
    clock.now += 15

    assert window.until_capacity() == pytest.approx(45)


def test_with_no_request_of_its_own_the_client_waits_the_whole_minute() -> None:
    assert RateWindow(Clock()).until_capacity() == 60


def test_with_none_of_its_own_requests_a_slot_comes_back_a_minute_after_the_first_refusal() -> None:
    clock = Clock()
    window = RateWindow(clock)
    window.note(answered(429))
    clock.now += 10
    window.note(answered(429))

    assert window.until_capacity() == pytest.approx(50)


def test_a_refusal_more_than_a_minute_old_starts_the_wait_again() -> None:
    clock = Clock()
    window = RateWindow(clock)
    window.note(answered(429))
    clock.now += 70
    window.note(answered(429))

    assert window.until_capacity() == pytest.approx(60)


def test_a_429_is_asked_again_on_the_backoffs_steps_and_the_last_retry_waits_out_the_window() -> None:
    clock = Clock()
    policy = RetryPolicy(3, clock)
    refused = httpx.Response(429)
    waits = []
    for attempt in range(4):
        wait = policy.wait_before_retry(SimpleNamespace(), refused, attempt)
        waits.append(wait)
        clock.now += wait or 0

    first, second, last, none = waits
    assert (0.5 <= first <= 0.625, 1 <= second <= 1.25, none) == (True, True, None)
    assert first + second + last == pytest.approx(60)


def test_an_early_retry_never_waits_longer_than_the_window() -> None:
    clock = Clock()
    policy = RetryPolicy(3, clock)
    policy.wait_before_retry(SimpleNamespace(), httpx.Response(200), 0)
    clock.now += 59.8

    assert policy.wait_before_retry(SimpleNamespace(), httpx.Response(429), 0) == pytest.approx(0.2)


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), ("0", 0.0)])
def test_retry_after_is_read_in_seconds(header: str, seconds: float) -> None:
    assert retry_after(SimpleNamespace(headers={"Retry-After": header})) == seconds


def test_retry_after_is_read_as_an_http_date() -> None:
    header = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    assert retry_after(SimpleNamespace(headers={"Retry-After": header})) == pytest.approx(30, abs=1.5)


@pytest.mark.parametrize("header", ["", "soon", "-5"])
def test_a_retry_after_that_does_not_parse_is_none(header: str) -> None:
    assert retry_after(SimpleNamespace(headers={"Retry-After": header})) is None
