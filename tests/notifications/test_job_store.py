"""How a send stores its job and takes its quota unit: one statement on PostgreSQL, a transaction elsewhere."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from accounts.models import Account, UsagePeriod
from accounts.plans import Plan
from accounts.services import account_create
from core.errors import DuplicateRequest, QuotaExceeded
from notifications.models import Job
from notifications.services import webhook_job_create


def _send(account: Account, key: str | None = None) -> Job:
    return webhook_job_create(
        account=account,
        url="https://hooks.example.com/in",
        payload={"b": 1, "a": 2},
        idempotency_key=key,
    )


@pytest.fixture
def account(db: None) -> Account:
    account, _ = account_create(email="store@example.com", plan=Plan.STARTUP)
    return account


def _used(account: Account) -> int:
    return sum(UsagePeriod.objects.filter(account=account).values_list("used", flat=True))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_once_the_period_has_a_usage_row_a_send_is_one_statement(account: Account) -> None:
    _send(account)  # creates this period's usage row

    with CaptureQueriesContext(connection) as queries:
        job = _send(account, key="k-2")

    assert len(queries) == 1, [query["sql"] for query in queries]
    assert "WITH unit AS" in queries[0]["sql"]
    stored = Job.objects.get(id=job.id)
    assert (stored.payload["payload"], stored.idempotency_key, stored.status, stored.priority) == (
        {"b": 1, "a": 2},
        "k-2",
        "pending",
        5,
    )
    assert list(stored.payload["payload"]) == ["b", "a"]
    assert stored.requeue_at is not None
    assert _used(account) == 2


def test_a_duplicate_inside_a_callers_transaction_leaves_that_transaction_usable(account: Account) -> None:
    with transaction.atomic():
        first = _send(account, key="dup")
        with pytest.raises(DuplicateRequest) as refused:
            _send(account, key="dup")
        # The caller's transaction goes on: the failed insert was undone to a savepoint.
        second = _send(account, key="other")

    assert refused.value.message == "Duplicate request detected"
    assert set(Job.objects.filter(account=account).values_list("id", flat=True)) == {first.id, second.id}
    assert _used(account) == 2


def test_a_send_past_the_quota_stores_nothing(account: Account) -> None:
    _send(account)
    UsagePeriod.objects.filter(account=account).update(used=account.limits.monthly_quota)

    with pytest.raises(QuotaExceeded) as refused:
        _send(account, key="late")

    assert refused.value.message.startswith("Monthly usage limit exceeded")
    assert not Job.objects.filter(idempotency_key="late").exists()
    assert _used(account) == account.limits.monthly_quota
