"""An account's own rate limit, requests a minute per key in place of its plan's: `setlimit --rate`, the service, and
the throttle that counts against it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account
from accounts.services import account_set_monthly_limit, account_set_rate_limit
from accounts.throttle import reset_rate_limits
from core.errors import InvalidRequest, RateLimitInvalid
from tests.accounts.test_monthly_limit import email_of, run, stored_limit
from tests.api.test_envelope import assert_error
from tests.conftest import Client


def stored_rate(client: Client) -> int | None:
    return Account.objects.get(pk=client.account.pk).rate_limit


def pings(client: Client, count: int) -> list[int]:
    return [client.get("/api/v1/ping").status_code for _ in range(count)]


def test_a_key_of_an_account_with_its_own_rate_gets_429_after_that_many_requests_and_not_before(free: Client) -> None:
    run("setlimit", email_of(free), "--rate", "8")

    assert pings(free, 8) == [200] * 8
    assert_error(free.get("/api/v1/ping"), 429, "Rate limit exceeded")


def test_rate_plan_gives_the_key_its_plans_rate_again(free: Client) -> None:
    account_set_rate_limit(account=free.account, rate=8)

    run("setlimit", email_of(free), "--rate", "plan")
    reset_rate_limits()

    assert stored_rate(free) is None
    assert pings(free, 6) == [200] * 5 + [429]


def test_a_rate_below_the_plans_limits_the_key_sooner(free: Client) -> None:
    account_set_rate_limit(account=free.account, rate=2)

    assert pings(free, 3) == [200, 200, 429]


def test_the_own_rate_replaces_the_plans_rate_and_nothing_else(free: Client) -> None:
    account_set_rate_limit(account=free.account, rate=600)

    limits = free.account.limits
    assert (limits.requests_per_minute, limits.monthly_quota, limits.quota_counts_email) == (600, 100, True)


def test_the_key_lookup_reads_the_own_rate_in_its_one_query(free: Client) -> None:
    account_set_rate_limit(account=free.account, rate=600)
    free.get("/api/v1/ping")  # this minute's use of the key is recorded

    with CaptureQueriesContext(connection) as queries:
        assert free.get("/api/v1/ping").status_code == 200

    assert len(queries) == 1


def test_setlimit_rate_prints_the_old_and_new_rate(free: Client) -> None:
    output = run("setlimit", email_of(free), "--rate", "1200")

    assert output == (
        f"Rate limit of {email_of(free)}: 1,200 requests a minute, set for this account "
        "(was 5 requests a minute, the Free plan's rate), per API key.\n"
    )
    assert stored_rate(free) == 1200


def test_setlimit_rate_plan_prints_the_plans_rate(free: Client) -> None:
    account_set_rate_limit(account=free.account, rate=1200)

    output = run("setlimit", email_of(free), "--rate", "plan")

    assert output == (
        f"Rate limit of {email_of(free)}: 5 requests a minute, the Free plan's rate "
        "(was 1,200 requests a minute, set for this account), per API key.\n"
    )


def test_setlimit_sets_the_monthly_limit_and_the_rate_together(free: Client) -> None:
    output = run("setlimit", email_of(free), "500", "--rate", "60")

    assert output.splitlines() == [
        f"Monthly limit of {email_of(free)}: 500, set for this account (was 100, the Free plan's quota). "
        "Used this cycle: 0 of 500.",
        f"Rate limit of {email_of(free)}: 60 requests a minute, set for this account "
        "(was 5 requests a minute, the Free plan's rate), per API key.",
    ]
    assert (stored_limit(free), stored_rate(free)) == (500, 60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "0"], RateLimitInvalid.message),
        (["--rate", "-5"], RateLimitInvalid.message),
        (["--rate", "1000001"], RateLimitInvalid.message),
        (["--rate", "lots"], "--rate takes a number of requests a minute or 'plan', not 'lots'"),
        (["--rate", "Plan"], "--rate takes a number of requests a minute or 'plan', not 'Plan'"),
        (["--rate", ""], "--rate takes a number of requests a minute or 'plan', not ''"),
        ([], "Give either a limit N or --plan-default, or --rate N or --rate plan"),
        # A refused rate leaves the monthly limit given with it unset too.
        (["500", "--rate", "0"], RateLimitInvalid.message),
    ],
)
def test_setlimit_refuses_anything_but_a_rate_in_range_or_plan(free: Client, args: list[str], message: str) -> None:
    account_set_rate_limit(account=free.account, rate=42)
    account_set_monthly_limit(account=free.account, limit=42)

    with pytest.raises(CommandError) as refused:
        run("setlimit", email_of(free), *args)

    assert str(refused.value) == message
    assert (stored_rate(free), stored_limit(free)) == (42, 42)


@pytest.mark.parametrize("rate", [0, -1, 1_000_001])
def test_the_service_refuses_a_rate_out_of_range(free: Client, rate: int) -> None:
    with pytest.raises(InvalidRequest, match=RateLimitInvalid.message):
        account_set_rate_limit(account=free.account, rate=rate)

    assert stored_rate(free) is None


def test_the_service_takes_the_highest_rate(free: Client) -> None:
    account_set_rate_limit(account=free.account, rate=1_000_000)

    assert stored_rate(free) == 1_000_000
