"""Every accepted job takes its quota unit, an email to a suppressed address too, and Retry Job takes the unit of a
job that never took one (docs/rules.md, "Quota" and "Retry Job"): no mail, and no event, for nothing.

The review's steps, replayed: suppress an address, send it a batch, remove the suppression, retry each job.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from importlib import import_module
from typing import Any

import pytest
from django.apps import apps
from django.test import Client as DjangoClient
from django.utils import timezone

from accounts.models import Account
from accounts.plans import Plan
from accounts.selectors import usage_get
from accounts.services import usage_consume
from event_endpoints.models import EventDelivery
from event_endpoints.services import endpoint_create
from notifications.models import DeliveryLog, Job, JobAnnouncement, JobStatus, JobType
from notifications.outcomes import finished_jobs_announce
from suppressions.models import Suppression
from tests.api.test_envelope import assert_error
from tests.api.test_user_api import signed_in
from tests.conftest import EMAIL, Client, wait_for_job
from tests.dashboard.pages import page_text
from tests.factories import DeliveryLogFactory, FailedJobFactory
from tests.fakes.providers import FakePostmark
from tests.providers_fixtures import POSTMARK_KEY

EMAIL_BATCH = "/api/v1/notifications/email/batch"
JOBS = "/api/v1/notifications/jobs"
SUPPRESSED = "Recipient is on the suppression list (MANUAL)"


def used(client: Client) -> int:
    return usage_get(account=client.account).used


def quota_message(client: Client) -> str:
    usage = usage_get(account=client.account)
    resets_on = usage.resets_on
    return (
        f"Monthly usage limit exceeded ({usage.used}/{usage.limit}). Upgrade your plan or wait for reset on "
        f"{resets_on.month}/{resets_on.day}/{resets_on.year}."
    )


def suppress(client: Client, *addresses: str) -> None:
    Suppression.objects.bulk_create(
        Suppression(account=client.account, email=address, reason="MANUAL") for address in addresses
    )


def platform_postmark(delivery_settings: Any) -> None:
    """Free emails go through the platform's providers: here the fake Postmark alone."""
    delivery_settings.PLATFORM_PROVIDERS = ["POSTMARK"]
    delivery_settings.PLATFORM_PROVIDER_KEYS = {"POSTMARK": POSTMARK_KEY}


def failed_on_arrival_unit_free(client: Client, to: str) -> Job:
    """An email failed on arrival for a suppressed address before such a send took its unit, as the migration that
    added ``quota_taken`` left it: no unit taken, never claimed, one log without a provider."""
    job = FailedJobFactory(
        account=client.account,
        type=JobType.EMAIL,
        payload={**EMAIL, "to": to},
        destination=to,
        attempts=1,
        error_message=SUPPRESSED,
        started_at=None,
        finished_at=timezone.now(),
        quota_taken=False,
    )
    DeliveryLogFactory(job=job, attempt=1, status="failed", error_message=SUPPRESSED)
    return job


@pytest.mark.django_db
def test_a_suppressed_send_takes_its_unit_and_is_refused_when_none_is_left(make_client: Callable[..., Client]) -> None:
    client = make_client(Plan.FREE, monthly_limit=2)
    suppress(client, "gone@example.com")

    first = client.send_email(to="gone@example.com")

    assert (first.status_code, first.json()["data"]["status"]) == (202, "failed")
    assert used(client) == 1
    assert client.send_webhook().status_code == 202
    assert_error(client.send_email(to="Gone@example.com"), 403, quota_message(client), "quota_exceeded")
    assert used(client) == 2
    assert Job.objects.filter(account=client.account).count() == 2


@pytest.mark.django_db
def test_a_batch_takes_the_units_of_its_suppressed_items(make_client: Callable[..., Client]) -> None:
    client = make_client(Plan.FREE, monthly_limit=3)
    suppress(client, "gone@example.com")

    response = client.post(EMAIL_BATCH, {"items": [{**EMAIL, "to": "gone@example.com"}, EMAIL, EMAIL]})

    assert response.status_code == 202
    assert [item["status"] for item in response.json()["data"]["items"]] == ["failed", "pending", "pending"]
    assert used(client) == 3
    assert list(Job.objects.filter(account=client.account).values_list("quota_taken", flat=True)) == [True] * 3


@pytest.mark.django_db
def test_an_over_quota_batch_of_suppressed_emails_stores_no_job_and_announces_nothing(
    make_client: Callable[..., Client],
) -> None:
    """The amplification: 100 suppressed emails, 5 endpoints on job.failed, were 500 signed POSTs at zero quota."""
    client = make_client(Plan.FREE, monthly_limit=1)
    for n in range(5):
        endpoint_create(account=client.account, url=f"https://events{n}.example.com/in", events=["job.failed"])
    client.account = Account.objects.get(pk=client.account.pk)
    assert client.send_webhook().status_code == 202
    addresses = [f"gone{n}@example.com" for n in range(100)]
    suppress(client, *addresses)

    refused = client.post(EMAIL_BATCH, {"items": [{**EMAIL, "to": address} for address in addresses]})

    assert_error(refused, 403, quota_message(client), "quota_exceeded")
    assert Job.objects.filter(account=client.account).count() == 1
    assert not JobAnnouncement.objects.exists()
    assert finished_jobs_announce() == 0
    assert not EventDelivery.objects.exists()
    assert used(client) == 1


@pytest.mark.usefixtures("worker")
def test_the_reviews_steps_the_batch_takes_the_units_and_its_retries_spend_nothing_more(
    make_client: Callable[..., Client], postmark: FakePostmark, delivery_settings: Any
) -> None:
    platform_postmark(delivery_settings)
    client = make_client(Plan.FREE, monthly_limit=2)
    assert client.post("/api/v1/suppressions", {"email": "gone@example.com"}).status_code == 201
    batch = client.post(EMAIL_BATCH, {"items": [{**EMAIL, "to": "gone@example.com"}] * 2})
    first, second = (item["jobId"] for item in batch.json()["data"]["items"])
    assert used(client) == 2
    assert client.delete("/api/v1/suppressions/gone@example.com").status_code == 200

    # At 2/2: each job took its unit when it was accepted, so its retry spends nothing.
    assert client.post(f"{JOBS}/{first}/retry").status_code == 200
    assert signed_in(client).post(f"/api/v1/user/jobs/{second}/retry").status_code == 200

    assert [wait_for_job(job_id).status for job_id in (first, second)] == [JobStatus.COMPLETED] * 2
    assert len(postmark.accepted) == 2
    assert used(client) == 2


@pytest.mark.usefixtures("worker")
def test_a_retry_takes_the_unit_its_job_never_took_or_is_refused_with_the_quotas_403(
    make_client: Callable[..., Client], postmark: FakePostmark, delivery_settings: Any
) -> None:
    platform_postmark(delivery_settings)
    client = make_client(Plan.FREE, monthly_limit=2)
    usage_consume(account=client.account)
    owing = [failed_on_arrival_unit_free(client, f"gone{n}@example.com") for n in range(3)]
    # A job that took its unit when accepted, and failed at its provider.
    counted = FailedJobFactory(account=client.account, type=JobType.EMAIL, payload=EMAIL, destination=EMAIL["to"])

    assert client.post(f"{JOBS}/{owing[0].id}/retry").status_code == 200
    assert used(client) == 2
    message = quota_message(client)
    assert_error(client.post(f"{JOBS}/{owing[1].id}/retry"), 403, message, "quota_exceeded")
    assert_error(signed_in(client).post(f"/api/v1/user/jobs/{owing[2].id}/retry"), 403, message, "quota_exceeded")
    assert client.post(f"{JOBS}/{counted.id}/retry").status_code == 200

    assert [wait_for_job(job.id).status for job in (owing[0], counted)] == [JobStatus.COMPLETED] * 2
    assert sorted(message["To"] for message in postmark.accepted) == ["gone0@example.com", EMAIL["to"]]
    assert used(client) == 2
    for refused in owing[1:]:
        refused.refresh_from_db()
        assert (refused.status, refused.attempts, refused.error_message) == (JobStatus.FAILED, 1, SUPPRESSED)
        assert refused.quota_taken is False
    assert Job.objects.get(id=owing[0].id).quota_taken is True


def test_the_migration_marks_the_jobs_that_took_no_unit(free: Client) -> None:
    """Before it, a suppressed send took no unit and a test job never does; every other job took its unit when
    accepted (a paid plan's email counts for nothing, whatever it is marked)."""
    now = timezone.now()
    arrived = failed_on_arrival_unit_free(free, "a@example.com")
    # Failed on arrival, then retried, claimed and failed again at its provider: its claim came after its first log.
    retried = failed_on_arrival_unit_free(free, "b@example.com")
    Job.objects.filter(id=retried.id).update(started_at=now + timedelta(minutes=1), error_message="503")
    # Suppressed while it waited: its claim came before the log that failed it, and its unit was taken at accept.
    waited = FailedJobFactory(account=free.account, type=JobType.EMAIL, started_at=now - timedelta(minutes=1))
    DeliveryLogFactory(job=waited, attempt=1, error_message=SUPPRESSED, created_at=now)
    test_job = FailedJobFactory(account=free.account, test=True)
    ordinary = FailedJobFactory(account=free.account)
    Job.objects.update(quota_taken=True)  # what the new column's default gives every row
    migration = import_module("notifications.migrations.0016_job_quota_taken")

    migration.mark_jobs_that_took_no_unit(apps, None)

    marked = dict(Job.objects.values_list("id", "quota_taken"))
    assert [marked[job.id] for job in (arrived, retried, waited, test_job, ordinary)] == [
        False,
        False,
        True,
        False,
        True,
    ]
    assert DeliveryLog.objects.count() == 3


def test_the_dashboards_retry_button_says_the_quotas_refusal(make_client: Callable[..., Client]) -> None:
    client = make_client(Plan.FREE, monthly_limit=1)
    usage_consume(account=client.account)
    job = failed_on_arrival_unit_free(client, "gone@example.com")
    browser = DjangoClient()
    browser.force_login(client.account.user)

    answer = browser.post(f"/dashboard/jobs/{job.id}/retry/", follow=True)

    assert quota_message(client) in page_text(answer)
    assert Job.objects.get(id=job.id).status == JobStatus.FAILED
    assert used(client) == 1
