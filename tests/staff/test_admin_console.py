"""The Django admin as staff's console: accounts and their actions, jobs, and what is never shown."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client as DjangoClient

from accounts.models import Account, UsagePeriod
from accounts.selectors import current_period
from accounts.services import account_delete, provider_key_set, signing_secret_generate
from core.crypto import encrypt
from notifications.models import Job, JobStatus
from tests.conftest import Client
from tests.dashboard.pages import page_text
from tests.factories import DeliveryLogFactory, EmailEventFactory, FailedJobFactory, JobFactory


@pytest.fixture
def staff(django_user_model: type) -> DjangoClient:
    user = django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops")
    browser = DjangoClient()
    browser.force_login(user)
    return browser


def test_staff_see_jobs_with_their_attempts(staff: DjangoClient, free: Client) -> None:
    job = FailedJobFactory(account=free.account)
    DeliveryLogFactory(job=job, attempt=1)

    listing = staff.get("/admin/notifications/job/")
    detail = staff.get(f"/admin/notifications/job/{job.id}/change/")

    assert listing.status_code == 200
    assert str(job.id) in listing.content.decode()
    assert detail.status_code == 200
    assert "503 Service Unavailable" in detail.content.decode()


def test_provider_keys_never_show_in_the_admin(staff: DjangoClient, startup: Client) -> None:
    provider_key_set(account=startup.account, provider="RESEND", api_key="re_secret_value")

    page = staff.get(f"/admin/accounts/account/{startup.account.pk}/change/").content.decode()

    assert "RESEND" in page
    assert "re_secret_value" not in page
    assert startup.account.provider_keys.get().encrypted_api_key not in page


# --- the accounts list and its actions ------------------------------------------------------------

ACCOUNTS = "/admin/accounts/account/"


def act(staff: DjangoClient, action: str, *accounts: Account, **fields: str) -> Any:
    return staff.post(ACCOUNTS, {"action": action, "_selected_action": [a.pk for a in accounts], **fields}, follow=True)


def test_accounts_are_found_by_email_with_their_usage_this_cycle(staff: DjangoClient, free: Client) -> None:
    start, _ = current_period(free.account)
    UsagePeriod.objects.create(account=free.account, period_start=start, used=7)
    UsagePeriod.objects.create(account=free.account, period_start=start - timedelta(days=40), used=99)

    page = staff.get(ACCOUNTS, {"q": free.account.user.email.upper()})

    text = page_text(page)
    assert page.status_code == 200
    assert free.account.user.email in text
    assert "7 / 100" in text
    assert f"/admin/notifications/job/?account__id__exact={free.account.pk}" in page.content.decode()


def test_the_state_filter_shows_deleted_accounts(staff: DjangoClient, free: Client, startup: Client) -> None:
    account_delete(account=free.account)

    deleted = page_text(staff.get(ACCOUNTS, {"state": "deleted"}))

    assert free.account.user.email in deleted
    assert startup.account.user.email not in deleted


def test_soft_delete_then_restore(staff: DjangoClient, free: Client) -> None:
    soft = act(staff, "soft_delete", free.account)

    assert "1 account(s) deleted; staff can restore them." in page_text(soft)
    assert free.get("/api/v1/ping").status_code == 403

    restored = act(staff, "restore", free.account)

    assert "1 account(s) restored" in page_text(restored)
    assert free.get("/api/v1/ping").status_code == 200


def test_erasing_asks_first_listing_what_goes_then_removes_it(staff: DjangoClient, free: Client) -> None:
    job = FailedJobFactory(account=free.account)
    DeliveryLogFactory(job=job, attempt=1)

    asked = act(staff, "erase", free.account)

    assert "Delete for good?" in page_text(asked)
    assert f"{free.account.user.email} : 1 job, 1 delivery log, 0 events" in page_text(asked)
    assert Account.objects.filter(pk=free.account.pk).exists()

    done = act(staff, "erase", free.account, apply="1")

    assert f"Deleted {free.account.user.email} for good: 1 job, 1 delivery log" in page_text(done)
    assert not Account.objects.filter(pk=free.account.pk).exists()
    assert not Job.objects.filter(id=job.id).exists()


def test_change_plan_asks_for_the_plan(staff: DjangoClient, free: Client) -> None:
    asked = act(staff, "change_plan", free.account)
    assert "A new plan starts a new billing cycle today." in page_text(asked)

    done = act(staff, "change_plan", free.account, apply="1", plan="indie")

    assert "1 account(s) moved to indie." in page_text(done)
    assert Account.objects.get(pk=free.account.pk).plan == "indie"


def test_a_custom_monthly_limit_is_set_and_cleared(staff: DjangoClient, free: Client) -> None:
    refused = act(staff, "set_monthly_limit", free.account, apply="1", limit="0")
    assert "Ensure this value is greater than or equal to 1." in page_text(refused)

    act(staff, "set_monthly_limit", free.account, apply="1", limit="2")
    assert Account.objects.get(pk=free.account.pk).monthly_limit == 2
    statuses = [free.send_webhook().status_code for _ in range(3)]
    assert statuses == [202, 202, 403]

    cleared = act(staff, "set_monthly_limit", free.account, apply="1", limit="")
    assert "1 account(s) now have their plan's quota." in page_text(cleared)
    assert Account.objects.get(pk=free.account.pk).monthly_limit is None


def test_reset_usage_lets_sends_through_again(staff: DjangoClient, free: Client) -> None:
    start, _ = current_period(free.account)
    UsagePeriod.objects.create(account=free.account, period_start=start, used=100)
    assert free.send_webhook().status_code == 403

    done = act(staff, "reset_usage", free.account)

    assert "Usage reset to 0 for 1 account(s)." in page_text(done)
    assert free.send_webhook().status_code == 202


def test_accounts_are_not_added_or_deleted_by_hand(staff: DjangoClient, free: Client) -> None:
    assert staff.get(f"{ACCOUNTS}add/").status_code == 403
    assert staff.get(f"{ACCOUNTS}{free.account.pk}/delete/").status_code == 403


# --- jobs, domains, secrets -----------------------------------------------------------------------

JOBS = "/admin/notifications/job/"


def test_jobs_are_filtered_by_account_type_and_status(staff: DjangoClient, free: Client, startup: Client) -> None:
    mine = FailedJobFactory(account=free.account)
    theirs = FailedJobFactory(account=startup.account)

    by_account = staff.get(JOBS, {"account__id__exact": free.account.pk, "status__exact": "failed"})

    assert by_account.status_code == 200
    assert str(mine.id) in page_text(by_account)
    assert str(theirs.id) not in page_text(by_account)


def test_a_job_shows_its_events_inline(staff: DjangoClient, free: Client) -> None:
    job = FailedJobFactory(account=free.account, type="email")
    EmailEventFactory(job=job, provider="POSTMARK", type="BOUNCED", recipient="gone@example.com")

    text = page_text(staff.get(f"{JOBS}{job.id}/change/"))

    assert "BOUNCED" in text
    assert "gone@example.com" in text


def test_the_retry_action_requeues_failed_jobs_only(
    staff: DjangoClient, free: Client, django_capture_on_commit_callbacks: Any
) -> None:
    failed = FailedJobFactory(account=free.account)
    completed = JobFactory(account=free.account, status=JobStatus.COMPLETED)

    with django_capture_on_commit_callbacks(execute=False):
        done = staff.post(JOBS, {"action": "retry", "_selected_action": [failed.id, completed.id]}, follow=True)

    assert "1 job(s) re-queued; 1 not failed, left as they were." in page_text(done)
    assert Job.objects.get(id=failed.id).status == JobStatus.PENDING
    assert Job.objects.get(id=completed.id).status == JobStatus.COMPLETED


def test_secrets_never_show(staff: DjangoClient, startup: Client) -> None:
    secret = signing_secret_generate(account=startup.account)
    job = JobFactory(account=startup.account, url_credentials=encrypt("user:hunter2"))

    pages = [
        staff.get(f"{ACCOUNTS}{startup.account.pk}/change/").content.decode(),
        staff.get(f"{JOBS}{job.id}/change/").content.decode(),
    ]

    for page in pages:
        assert secret not in page
        assert "hunter2" not in page
        assert startup.api_key not in page
