"""The Django admin as staff's console: accounts and their actions, jobs, and what is never shown."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client as DjangoClient

from accounts.models import Account, UsagePeriod
from accounts.selectors import current_period
from accounts.services import account_delete, provider_key_set, signing_secret_generate, usage_consume
from core.crypto import encrypt
from notifications.models import Job, JobStatus
from tests.conftest import Client, ready_to_send
from tests.dashboard.pages import page_text
from tests.factories import DeliveryLogFactory, EmailEventFactory, FailedJobFactory, JobFactory
from tests.staff.conftest import VIEW_ONLY


def console(user: Any) -> DjangoClient:
    browser = DjangoClient()
    browser.force_login(user)
    return browser


@pytest.fixture
def staff(django_user_model: type) -> DjangoClient:
    return console(
        django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw-for-ops")
    )


def offered_actions(page: Any) -> set[str]:
    """The actions in the changelist's dropdown (the admin shows none when no action is allowed)."""
    form = page.context["action_form"]
    return {name for name, _ in form.fields["action"].choices if name} if form else set()


def test_staff_see_jobs_with_their_attempts(staff: DjangoClient, free: Client) -> None:
    job = FailedJobFactory(account=free.account)
    DeliveryLogFactory(job=job, attempt=1)

    listing = staff.get("/admin/notifications/job/")
    detail = staff.get(f"/admin/notifications/job/{job.id}/change/")

    assert listing.status_code == 200
    assert str(job.id) in listing.content.decode()
    assert detail.status_code == 200
    assert "503 Service Unavailable" in detail.content.decode()


def test_a_webhooks_secret_header_values_never_show_in_the_admin(staff: DjangoClient, free: Client) -> None:
    sent = free.send_webhook(headers={"Authorization": "Bearer sk_live_do_not_show", "X-Trace": "trace-7"})
    job_id = sent.json()["data"]["jobId"]

    page = staff.get(f"/admin/notifications/job/{job_id}/change/").content.decode()

    assert "Authorization" in page
    assert "trace-7" in page
    assert "sk_live_do_not_show" not in page
    assert Job.objects.get(pk=job_id).secret_headers not in page  # not even its ciphertext


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
    assert f"{free.account.user.email} : 1 job, 1 delivery log, 0 attachments, 0 events" in page_text(asked)
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


def test_a_custom_rate_limit_is_set_and_cleared(staff: DjangoClient, free: Client) -> None:
    asked = act(staff, "set_rate_limit", free.account)
    assert "Requests a minute per API key, in place of the plan's." in page_text(asked)
    for refused_rate, error in [("0", "greater than or equal to 1"), ("1000001", "less than or equal to 1000000")]:
        refused = act(staff, "set_rate_limit", free.account, apply="1", rate=refused_rate)
        assert f"Ensure this value is {error}." in page_text(refused)
    assert Account.objects.get(pk=free.account.pk).rate_limit is None

    done = act(staff, "set_rate_limit", free.account, apply="1", rate="7")
    assert "1 account(s) now have a rate limit of 7 requests a minute." in page_text(done)
    assert Account.objects.get(pk=free.account.pk).rate_limit == 7
    assert [free.get("/api/v1/ping").status_code for _ in range(8)] == [200] * 7 + [429]

    cleared = act(staff, "set_rate_limit", free.account, apply="1", rate="")
    assert "1 account(s) now have their plan's rate limit." in page_text(cleared)
    assert Account.objects.get(pk=free.account.pk).rate_limit is None


def test_an_accounts_page_shows_its_own_rate_limit(staff: DjangoClient, free: Client) -> None:
    act(staff, "set_rate_limit", free.account, apply="1", rate="1234")

    page = staff.get(f"{ACCOUNTS}{free.account.pk}/change/")

    assert page.status_code == 200
    assert "Rate limit:" in page_text(page)
    assert "1234" in page_text(page)


def test_reset_usage_lets_sends_through_again(staff: DjangoClient, free: Client) -> None:
    start, _ = current_period(free.account)
    UsagePeriod.objects.create(account=free.account, period_start=start, used=100)
    assert free.send_webhook().status_code == 403

    done = act(staff, "reset_usage", free.account)

    assert "Usage reset to 0 for 1 account(s)." in page_text(done)
    assert free.send_webhook().status_code == 202


# --- who may use which action ----------------------------------------------------------------------

ACCOUNT_ACTIONS = {
    "soft_delete",
    "restore",
    "erase",
    "change_plan",
    "set_monthly_limit",
    "set_rate_limit",
    "reset_usage",
}
# Each account action as posted once its page, if it has one, is answered.
CHANGING_ACTIONS = [
    pytest.param("soft_delete", {}, id="soft_delete"),
    pytest.param("restore", {}, id="restore"),
    pytest.param("change_plan", {"apply": "1", "plan": "startup"}, id="change_plan"),
    pytest.param("set_monthly_limit", {"apply": "1", "limit": "5"}, id="set_monthly_limit"),
    pytest.param("set_rate_limit", {"apply": "1", "rate": "50"}, id="set_rate_limit"),
    pytest.param("reset_usage", {}, id="reset_usage"),
]
ERASING = pytest.param("erase", {"apply": "1"}, id="erase")


def stored_accounts() -> list[dict[str, Any]]:
    """Every account as the database holds it, with its usage: what an action would change."""
    accounts = Account.objects.order_by("pk").values(
        "pk", "plan", "plan_started_on", "monthly_limit", "rate_limit", "deleted_at", "is_active", "user__is_active"
    )
    usage = UsagePeriod.objects.order_by("pk").values("account_id", "period_start", "used")
    return [*accounts, *usage]


def accounts_every_action_would_change(make_client: Callable[..., Client], count: int) -> list[Account]:
    """``count`` accounts with usage this cycle, every other one soft-deleted."""
    accounts = [make_client().account for _ in range(count)]
    for account in accounts:
        UsagePeriod.objects.create(account=account, period_start=current_period(account)[0], used=7)
    for account in accounts[1::2]:
        account_delete(account=account)
    return accounts


def test_a_view_only_staff_user_is_offered_no_account_action(make_staff: Callable[..., Any], free: Client) -> None:
    page = console(make_staff(*VIEW_ONLY)).get(ACCOUNTS)

    assert page.status_code == 200
    assert free.account.user.email in page_text(page)
    assert offered_actions(page) == set()


@pytest.mark.parametrize(("action", "fields"), [*CHANGING_ACTIONS, ERASING])
def test_a_view_only_staff_user_posting_an_account_action_anyway_changes_nothing(
    make_staff: Callable[..., Any], make_client: Callable[..., Client], action: str, fields: dict[str, str]
) -> None:
    accounts = accounts_every_action_would_change(make_client, 2)
    before = stored_accounts()

    answer = act(console(make_staff(*VIEW_ONLY)), action, *accounts, **fields)

    assert answer.status_code == 200
    assert stored_accounts() == before


def test_a_staff_user_with_change_account_has_every_account_action_but_erase(
    make_staff: Callable[..., Any], free: Client
) -> None:
    support = console(make_staff("accounts.view_account", "accounts.change_account"))

    offered = offered_actions(support.get(ACCOUNTS))
    done = act(support, "change_plan", free.account, apply="1", plan="indie")

    assert offered == ACCOUNT_ACTIONS - {"erase"}
    assert "1 account(s) moved to indie." in page_text(done)
    assert Account.objects.get(pk=free.account.pk).plan == "indie"


def test_a_staff_user_with_delete_account_may_erase_and_nothing_else(
    make_staff: Callable[..., Any], free: Client
) -> None:
    eraser = console(make_staff("accounts.view_account", "accounts.delete_account"))

    offered = offered_actions(eraser.get(ACCOUNTS))
    done = act(eraser, "erase", free.account, apply="1")

    assert offered == {"erase"}
    assert f"Deleted {free.account.user.email} for good" in page_text(done)
    assert not Account.objects.filter(pk=free.account.pk).exists()


# --- how many rows one action takes ----------------------------------------------------------------

NARROW_THE_LIST = "Narrow the list with its filters or search, and act on one part at a time."


@pytest.mark.parametrize(("action", "fields"), CHANGING_ACTIONS)
def test_an_account_action_on_more_than_100_accounts_is_refused_and_changes_nothing(
    staff: DjangoClient, make_client: Callable[..., Client], action: str, fields: dict[str, str]
) -> None:
    accounts = accounts_every_action_would_change(make_client, 101)
    before = stored_accounts()

    refused = act(staff, action, accounts[0], select_across="1", **fields)

    assert (
        f"101 accounts selected, more than the 100 this action takes at a time: nothing was changed. {NARROW_THE_LIST}"
    ) in page_text(refused)
    assert stored_accounts() == before


def test_an_account_action_on_exactly_100_accounts_goes_ahead(
    staff: DjangoClient, make_client: Callable[..., Client]
) -> None:
    accounts = [make_client().account for _ in range(100)]

    done = act(staff, "change_plan", accounts[0], select_across="1", apply="1", plan="indie")

    assert "100 account(s) moved to indie." in page_text(done)
    assert Account.objects.filter(plan="indie").count() == 100


def test_erasing_more_than_20_accounts_at_once_is_refused_and_deletes_nothing(
    staff: DjangoClient, make_client: Callable[..., Client]
) -> None:
    accounts = [make_client().account for _ in range(21)]

    asked = act(staff, "erase", accounts[0], select_across="1")
    applied = act(staff, "erase", *accounts, apply="1")

    refusal = (
        f"21 accounts selected, more than the 20 this action takes at a time: nothing was changed. {NARROW_THE_LIST}"
    )
    assert refusal in page_text(asked)
    assert "Delete for good?" not in page_text(asked)
    assert refusal in page_text(applied)
    assert Account.objects.count() == 21


def test_accounts_are_not_added_or_deleted_by_hand(staff: DjangoClient, free: Client) -> None:
    assert staff.get(f"{ACCOUNTS}add/").status_code == 403
    assert staff.get(f"{ACCOUNTS}{free.account.pk}/delete/").status_code == 403


# --- jobs, domains, secrets -----------------------------------------------------------------------

JOBS = "/admin/notifications/job/"
EVENTS = "/admin/webhooks_inbound/emailevent/"


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


def test_the_retry_action_requeues_a_test_keys_failed_job_too(
    staff: DjangoClient, free: Client, django_capture_on_commit_callbacks: Any
) -> None:
    failed = FailedJobFactory(account=free.account, test=True)

    with django_capture_on_commit_callbacks(execute=False):
        done = staff.post(JOBS, {"action": "retry", "_selected_action": [failed.id]}, follow=True)

    assert "1 job(s) re-queued" in page_text(done)
    assert Job.objects.get(id=failed.id).status == JobStatus.PENDING


def test_the_retry_action_leaves_a_job_that_owes_its_unit_failed_when_the_quota_is_spent(
    staff: DjangoClient, make_client: Callable[..., Client], django_capture_on_commit_callbacks: Any
) -> None:
    client = make_client(monthly_limit=1)
    usage_consume(account=client.account)
    owing = FailedJobFactory(account=client.account, quota_taken=False)

    with django_capture_on_commit_callbacks(execute=False):
        done = staff.post(JOBS, {"action": "retry", "_selected_action": [owing.id]}, follow=True)

    text = page_text(done)
    assert "0 job(s) re-queued; 0 not failed, left as they were." in text
    # The admin's message capitalises its first letter: a job id's, when that is a letter.
    assert f"{owing.id}: monthly usage limit exceeded (1/1).".casefold() in text.casefold()
    assert Job.objects.get(id=owing.id).status == JobStatus.FAILED


def test_a_view_only_staff_user_cannot_retry_jobs(
    make_staff: Callable[..., Any], free: Client, django_capture_on_commit_callbacks: Any
) -> None:
    failed = FailedJobFactory(account=free.account)
    viewer = console(make_staff(*VIEW_ONLY))

    offered = offered_actions(viewer.get(JOBS))
    with django_capture_on_commit_callbacks(execute=False) as published:
        answer = viewer.post(JOBS, {"action": "retry", "_selected_action": [failed.id]}, follow=True)

    assert offered == set()
    assert answer.status_code == 200
    assert Job.objects.get(id=failed.id).status == JobStatus.FAILED
    assert published == []


def test_a_staff_user_with_change_job_may_retry_jobs(
    make_staff: Callable[..., Any], free: Client, django_capture_on_commit_callbacks: Any
) -> None:
    failed = FailedJobFactory(account=free.account)
    operator = console(make_staff("notifications.view_job", "notifications.change_job"))

    offered = offered_actions(operator.get(JOBS))
    with django_capture_on_commit_callbacks(execute=False):
        done = operator.post(JOBS, {"action": "retry", "_selected_action": [failed.id]}, follow=True)

    assert offered == {"retry"}
    assert "1 job(s) re-queued; 0 not failed, left as they were." in page_text(done)
    assert Job.objects.get(id=failed.id).status == JobStatus.PENDING


def test_retrying_more_than_500_jobs_at_once_is_refused_and_points_to_retryfailed(
    staff: DjangoClient, free: Client, django_capture_on_commit_callbacks: Any
) -> None:
    jobs = Job.objects.bulk_create(FailedJobFactory.build_batch(501, account=free.account))

    with django_capture_on_commit_callbacks(execute=False) as published:
        refused = staff.post(
            JOBS, {"action": "retry", "select_across": "1", "_selected_action": [jobs[0].id]}, follow=True
        )

    assert (
        "501 jobs selected, more than the 500 this action takes at a time: nothing was changed. "
        "For more, an operator runs manage.py retryfailed (docs/operations.md)."
    ) in page_text(refused)
    assert Job.objects.filter(status=JobStatus.FAILED).count() == 501
    assert published == []


def test_djangos_own_delete_selected_is_bounded_too(staff: DjangoClient, free: Client) -> None:
    jobs = Job.objects.bulk_create(FailedJobFactory.build_batch(101, account=free.account))
    delete_all = {"action": "delete_selected", "select_across": "1", "_selected_action": [jobs[0].id], "post": "yes"}

    refused = staff.post(JOBS, delete_all, follow=True)
    asked = staff.post(JOBS, {"action": "delete_selected", "_selected_action": [job.id for job in jobs[:100]]})

    assert (
        f"101 jobs selected, more than the 100 this action takes at a time: nothing was changed. {NARROW_THE_LIST}"
    ) in page_text(refused)
    assert Job.objects.count() == 101
    assert "Are you sure you want to delete the selected jobs?" in page_text(asked)


def test_the_events_list_takes_as_few_queries_for_many_events_as_for_one(
    staff: DjangoClient, free: Client, django_assert_max_num_queries: Any
) -> None:
    jobs = FailedJobFactory.create_batch(40, account=free.account, type="email")
    for job in jobs:
        EmailEventFactory(job=job, type="BOUNCED")

    # The session, the user, the list's two counts and its page: no query per event for its job or account.
    with django_assert_max_num_queries(5):
        page = staff.get(EVENTS)

    assert page.status_code == 200
    assert all(str(job.id) in page_text(page) for job in jobs)


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


def test_sender_domains_offer_no_bare_delete_which_would_leave_them_at_the_providers(
    staff: DjangoClient, startup: Client
) -> None:
    ready_to_send(startup)

    page = staff.get("/admin/domains/senderdomain/").content.decode()

    assert "example.com" in page
    assert 'name="action"' not in page  # no action is offered at all, Django's "Delete selected" included
