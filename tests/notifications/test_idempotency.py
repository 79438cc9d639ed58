from __future__ import annotations

from collections.abc import Callable

import pytest

from accounts.models import UsagePeriod
from accounts.plans import Plan
from notifications.models import Job
from tests.api.test_envelope import assert_error
from tests.conftest import WEBHOOK, Client, send_concurrently


def _used(client: Client) -> int:
    return sum(UsagePeriod.objects.filter(account=client.account).values_list("used", flat=True))


def test_the_same_key_twice_is_a_409_and_the_first_job_is_untouched(free: Client) -> None:
    first = free.send_webhook(idempotencyKey="order-1")
    job_before = Job.objects.get(id=first.json()["data"]["jobId"])

    second = free.send_webhook(idempotencyKey="order-1", payload={"other": True})

    assert first.status_code == 202
    assert_error(second, 409, "Duplicate request detected")
    assert Job.objects.filter(account=free.account).count() == 1
    job_after = Job.objects.get(id=job_before.id)
    assert (job_after.payload, job_after.status) == (job_before.payload, job_before.status)
    assert _used(free) == 1


def test_the_key_is_shared_across_job_types(free: Client) -> None:
    free.send_webhook(idempotencyKey="k")

    assert_error(free.send_email(idempotencyKey="k"), 409, "Duplicate request detected")


def test_keys_are_per_account(make_client: Callable[..., Client]) -> None:
    first, second = make_client(), make_client()

    assert first.send_webhook(idempotencyKey="shared").status_code == 202
    assert second.send_webhook(idempotencyKey="shared").status_code == 202


def test_a_duplicate_is_reported_before_the_quota(free: Client) -> None:
    free.send_webhook(idempotencyKey="k")
    UsagePeriod.objects.filter(account=free.account).update(used=100)

    assert_error(free.send_webhook(idempotencyKey="k"), 409, "Duplicate request detected")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_requests_with_one_key_create_one_job(make_client: Callable[..., Client]) -> None:
    client = make_client(Plan.STARTUP)
    body = {**WEBHOOK, "idempotencyKey": "race"}

    statuses = sorted(send_concurrently(client, body, count=20, workers=20))

    assert statuses == [202] + [409] * 19
    assert Job.objects.filter(account=client.account).count() == 1
    assert _used(client) == 1
