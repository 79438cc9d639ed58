"""An account's own monthly limit in place of its plan's quota, and putting a cycle's usage back to 0."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.billing import billing_period, us_date
from accounts.models import Account, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import usage_get
from accounts.services import MONTHLY_LIMIT_MESSAGE, account_set_monthly_limit, usage_reset
from core.errors import InvalidRequest
from tests.api.test_envelope import assert_error
from tests.conftest import Client


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def email_of(client: Client) -> str:
    return client.account.user.email


def fill(client: Client, used: int) -> None:
    start, _ = billing_period(anchor=client.account.plan_started_on, today=timezone.now().date())
    UsagePeriod.objects.update_or_create(account=client.account, period_start=start, defaults={"used": used})


def used(client: Client) -> int:
    return usage_get(account=client.account).used


def quota_message(client: Client, used: int, limit: int) -> str:
    resets_on = us_date(usage_get(account=client.account).resets_on)
    return f"Monthly usage limit exceeded ({used}/{limit}). Upgrade your plan or wait for reset on {resets_on}."


def stored_limit(client: Client) -> int | None:
    return Account.objects.get(pk=client.account.pk).monthly_limit


def test_a_custom_limit_replaces_the_plan_quota_and_nothing_else(free: Client) -> None:
    account_set_monthly_limit(account=free.account, limit=250)

    limits = free.account.limits
    assert (limits.monthly_quota, limits.requests_per_minute, limits.quota_counts_email) == (250, 5, True)
    assert usage_get(account=free.account).limit == 250


def test_the_api_refuses_a_send_at_the_custom_limit(free: Client) -> None:
    run("setlimit", email_of(free), "3")
    fill(free, 2)

    assert free.send_webhook().status_code == 202
    assert_error(free.send_webhook(), 403, quota_message(free, 3, 3))
    assert free.account.jobs.count() == 1
    assert used(free) == 3


def test_a_custom_limit_above_the_plan_quota_lets_sends_through(make_client: Callable[..., Client]) -> None:
    indie = make_client(Plan.INDIE)
    fill(indie, 4000)
    assert indie.send_webhook().status_code == 403

    run("setlimit", email_of(indie), "4500")

    assert indie.send_webhook().status_code == 202
    assert used(indie) == 4001


def test_the_usage_endpoint_reports_the_custom_limit(free: Client) -> None:
    account_set_monthly_limit(account=free.account, limit=1234)

    response = free.get("/api/v1/user/usage")

    assert response.status_code == 200
    assert response.json()["data"]["limit"] == 1234


def test_setlimit_prints_the_old_and_new_limit(free: Client) -> None:
    fill(free, 7)

    output = run("setlimit", email_of(free), "5000")

    assert output == (
        f"Monthly limit of {email_of(free)}: 5,000, set for this account "
        "(was 100, the Free plan's quota). Used this cycle: 7 of 5,000.\n"
    )
    assert stored_limit(free) == 5000


def test_setlimit_plan_default_goes_back_to_the_plan_quota(free: Client) -> None:
    account_set_monthly_limit(account=free.account, limit=3)
    fill(free, 3)
    assert free.send_webhook().status_code == 403

    output = run("setlimit", email_of(free), "--plan-default")

    assert output == (
        f"Monthly limit of {email_of(free)}: 100, the Free plan's quota "
        "(was 3, set for this account). Used this cycle: 3 of 100.\n"
    )
    assert stored_limit(free) is None
    assert free.send_webhook().status_code == 202


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["0"], MONTHLY_LIMIT_MESSAGE),
        (["-5"], MONTHLY_LIMIT_MESSAGE),
        ([], "Give either a limit N or --plan-default"),
        (["10", "--plan-default"], "Give either a limit N or --plan-default"),
        (["lots"], "invalid int value: 'lots'"),
    ],
)
def test_setlimit_refuses_anything_but_a_positive_limit_or_the_plan_default(
    free: Client, args: list[str], message: str
) -> None:
    account_set_monthly_limit(account=free.account, limit=42)

    with pytest.raises(CommandError, match=message):
        run("setlimit", email_of(free), *args)

    assert stored_limit(free) == 42


@pytest.mark.django_db
@pytest.mark.parametrize("command", [["setlimit", "ghost@example.com", "10"], ["resetusage", "ghost@example.com"]])
def test_the_commands_name_an_unknown_account(command: list[str]) -> None:
    with pytest.raises(CommandError, match=r"^No account for ghost@example\.com$"):
        run(*command)


def test_the_service_refuses_a_limit_below_one(free: Client) -> None:
    with pytest.raises(InvalidRequest, match=MONTHLY_LIMIT_MESSAGE):
        account_set_monthly_limit(account=free.account, limit=0)

    assert stored_limit(free) is None


def test_resetusage_lets_sends_through_again(free: Client) -> None:
    fill(free, 100)
    assert_error(free.send_webhook(), 403, quota_message(free, 100, 100))

    output = run("resetusage", email_of(free))

    usage = usage_get(account=free.account)
    assert output == (
        f"Usage of {email_of(free)} in the cycle from {us_date(usage.period_start)}: 100 -> 0 of 100 "
        f"(the cycle resets on {us_date(usage.resets_on)}).\n"
    )
    assert free.send_webhook().status_code == 202
    assert used(free) == 1


def test_resetusage_touches_only_the_current_cycle(free: Client) -> None:
    earlier = UsagePeriod.objects.create(account=free.account, period_start=date(2020, 1, 1), used=80)
    fill(free, 60)

    assert usage_reset(account=free.account) == 60

    assert used(free) == 0
    earlier.refresh_from_db()
    assert earlier.used == 80


def test_resetusage_of_an_account_that_has_not_sent_this_cycle_changes_nothing(free: Client) -> None:
    assert usage_reset(account=free.account) == 0

    assert not UsagePeriod.objects.filter(account=free.account).exists()
