"""How long the client waits after a 429 without ``Retry-After`` (NotifyHub's never has one): until the oldest
request of its rolling minute is a minute old (docs/rules.md, "Limits"), on a clock the test turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace

import pytest

from tests.client.sdk import notifyhub

RateWindow = notifyhub._retry.RateWindow
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


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), ("0", 0.0)])
def test_retry_after_is_read_in_seconds(header: str, seconds: float) -> None:
    assert retry_after(SimpleNamespace(headers={"Retry-After": header})) == seconds


def test_retry_after_is_read_as_an_http_date() -> None:
    header = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    assert retry_after(SimpleNamespace(headers={"Retry-After": header})) == pytest.approx(30, abs=1.5)


@pytest.mark.parametrize("header", ["", "soon", "-5"])
def test_a_retry_after_that_does_not_parse_is_none(header: str) -> None:
    assert retry_after(SimpleNamespace(headers={"Retry-After": header})) is None
