from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from accounts.plans import Plan
from accounts.throttle import api_key_hit
from tests.api.test_envelope import assert_error
from tests.conftest import Client


def test_the_free_plan_gets_five_requests_a_minute(free: Client) -> None:
    statuses = [free.get("/api/v1/ping").status_code for _ in range(5)]

    response = free.get("/api/v1/ping")

    assert statuses == [200] * 5
    assert_error(response, 429, "Rate limit exceeded")
    assert "Retry-After" not in response.headers
    assert "retryAfter" not in response.json()


def test_every_api_request_counts_even_rejected_ones(free: Client) -> None:
    for _ in range(2):
        free.get("/api/v1/ping")
    for _ in range(3):
        assert free.send_webhook(url="http://not-https.example.com").status_code == 400

    assert free.send_webhook().status_code == 429
    assert free.account.jobs.count() == 0


def test_keys_are_limited_separately(make_client: Callable[..., Client]) -> None:
    first, second = make_client(), make_client()
    for _ in range(5):
        first.get("/api/v1/ping")

    assert first.get("/api/v1/ping").status_code == 429
    assert second.get("/api/v1/ping").status_code == 200


def test_the_limit_is_checked_after_authentication(free: Client) -> None:
    for _ in range(5):
        free.get("/api/v1/ping")

    free.api_key = "nh_" + "f" * 64
    assert_error(free.get("/api/v1/ping"), 401, "Invalid API key")


@pytest.mark.parametrize(("plan", "limit"), [(Plan.INDIE, 50), (Plan.STARTUP, 200)])
def test_paid_plans_get_their_own_limit(make_client: Callable[..., Client], plan: str, limit: int) -> None:
    client = make_client(plan)
    api_key = client.account.api_keys.get()

    allowed = sum(api_key_hit(api_key=api_key) for _ in range(limit + 10))

    assert allowed == limit


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_the_redis_window_is_exact_under_concurrency(make_client: Callable[..., Client]) -> None:
    api_key = make_client(Plan.STARTUP).account.api_keys.get()

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda _: api_key_hit(api_key=api_key), range(320)))

    assert sum(results) == 200
