from __future__ import annotations

from collections.abc import Callable
from datetime import date

import pytest
from django.utils import timezone

from accounts.billing import billing_period, us_date
from accounts.models import Account, UsagePeriod
from accounts.plans import Plan
from accounts.services import account_set_plan
from notifications.models import Job
from tests.api.test_envelope import assert_error
from tests.conftest import WEBHOOK, Client, ready_to_send, send_concurrently


def _fill(client: Client, used: int) -> None:
    start, _ = billing_period(anchor=client.account.plan_started_on, today=timezone.now().date())
    UsagePeriod.objects.update_or_create(account=client.account, period_start=start, defaults={"used": used})


def _reset_text(client: Client) -> str:
    return us_date(billing_period(anchor=client.account.plan_started_on, today=timezone.now().date())[1])


def test_the_free_plan_counts_emails_and_webhooks(free: Client) -> None:
    free.send_email()
    free.send_webhook()

    assert UsagePeriod.objects.get(account=free.account).used == 2


def test_paid_plans_count_webhooks_only(startup: Client) -> None:
    ready_to_send(startup)
    assert startup.send_email().status_code == 202
    assert startup.send_email().status_code == 202
    startup.send_webhook()

    assert UsagePeriod.objects.get(account=startup.account).used == 1


def test_an_exhausted_quota_is_a_403_with_the_reset_date(free: Client) -> None:
    _fill(free, 100)

    response = free.send_webhook()

    assert_error(
        response,
        403,
        f"Monthly usage limit exceeded (100/100). Upgrade your plan or wait for reset on {_reset_text(free)}.",
    )
    assert free.account.jobs.count() == 0


def test_the_last_unit_is_spent_then_refused(free: Client) -> None:
    _fill(free, 99)

    assert free.send_email().status_code == 202
    assert free.send_email().status_code == 403
    assert UsagePeriod.objects.get(account=free.account).used == 100


def test_paid_emails_go_through_when_the_webhook_quota_is_spent(make_client: Callable[..., Client]) -> None:
    indie = ready_to_send(make_client(Plan.INDIE))
    _fill(indie, 4000)

    assert indie.send_email().status_code == 202
    assert_error(
        indie.send_webhook(),
        403,
        f"Monthly usage limit exceeded (4000/4000). Upgrade your plan or wait for reset on {_reset_text(indie)}.",
    )


def test_a_new_plan_starts_a_new_cycle(free: Client) -> None:
    Account.objects.filter(pk=free.account.pk).update(plan_started_on=date(2020, 1, 15))
    free.account.refresh_from_db()
    _fill(free, 100)

    account_set_plan(account=free.account, plan=Plan.INDIE)

    assert free.send_webhook().status_code == 202


@pytest.mark.parametrize(
    ("anchor", "today", "start", "reset"),
    [
        (date(2026, 3, 10), date(2026, 11, 21), date(2026, 11, 10), date(2026, 12, 10)),
        (date(2026, 3, 10), date(2026, 11, 9), date(2026, 10, 10), date(2026, 11, 10)),
        (date(2026, 3, 10), date(2026, 11, 10), date(2026, 11, 10), date(2026, 12, 10)),
        (date(2026, 1, 31), date(2026, 2, 28), date(2026, 2, 28), date(2026, 3, 31)),
        (date(2026, 1, 31), date(2026, 2, 27), date(2026, 1, 31), date(2026, 2, 28)),
        (date(2023, 12, 31), date(2024, 2, 29), date(2024, 2, 29), date(2024, 3, 31)),
        (date(2026, 11, 21), date(2026, 11, 21), date(2026, 11, 21), date(2026, 12, 21)),
        (date(2025, 12, 5), date(2026, 1, 4), date(2025, 12, 5), date(2026, 1, 5)),
    ],
)
def test_billing_periods_follow_the_anchor_day(anchor: date, today: date, start: date, reset: date) -> None:
    assert billing_period(anchor=anchor, today=today) == (start, reset)


def test_reset_dates_are_written_without_zero_padding() -> None:
    assert us_date(date(2026, 3, 5)) == "3/5/2026"
    assert us_date(date(2026, 12, 31)) == "12/31/2026"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_requests_against_three_units_accept_exactly_three(
    make_client: Callable[..., Client],
) -> None:
    client = make_client(Plan.STARTUP)
    _fill(client, 15_000 - 3)

    statuses = send_concurrently(client, WEBHOOK, count=50, workers=25)

    assert statuses.count(202) == 3
    assert statuses.count(403) == 47
    assert Job.objects.filter(account=client.account).count() == 3
    assert UsagePeriod.objects.get(account=client.account).used == 15_000
