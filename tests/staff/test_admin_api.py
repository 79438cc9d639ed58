"""POST /api/v1/admin/users/<id>/restore and DELETE /api/v1/admin/users/<id>/permanent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from accounts.models import Account, ApiKey, ProviderKey, SigningSecret, UsagePeriod
from accounts.services import account_delete, signing_secret_generate
from domains.models import DomainRegistration, SenderDomain
from notifications.models import Attachment, DailyTally, DeliveryLog, Job
from staff.views import MISSING_PERMISSION, SIGN_IN_REQUIRED, STAFF_ONLY
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client
from tests.domains.test_domain_api import request_domain, with_keys
from tests.factories import DeliveryLogFactory, EmailEventFactory, FailedJobFactory
from tests.fakes.providers import FakeResend, FakeSendGrid
from tests.staff.conftest import VIEW_ONLY, admin_session
from webhooks_inbound.models import EmailEvent, TrackingCredentials


def restore(client: APIClient, user_id: int) -> Any:
    return client.post(f"/api/v1/admin/users/{user_id}/restore")


def erase(client: APIClient, user_id: int) -> Any:
    return client.delete(f"/api/v1/admin/users/{user_id}/permanent")


def with_everything(client: Client) -> Job:
    """An account with a job, its logs, attachment and events, a tally, a signing secret and tracking credentials."""
    account = client.account
    job = FailedJobFactory(account=account)
    DeliveryLogFactory.create_batch(2, job=job, attempt=1)
    Attachment.objects.create(
        job=job, position=0, filename="a.pdf", content_type="application/pdf", size=3, sha256="0" * 64, content=b"pdf"
    )
    EmailEventFactory(job=job, type="BOUNCED")
    DailyTally.objects.create(account=account, day=timezone.now().astimezone(UTC).date(), failed=1)
    UsagePeriod.objects.create(account=account, period_start=timezone.now().date(), used=3)
    signing_secret_generate(account=account)
    TrackingCredentials.objects.create(account=account, sendgrid_verification_key="key")
    return job


# --- who may call ---------------------------------------------------------------------------------


def test_without_a_staff_session_both_are_refused(free: Client, staff_user: Any) -> None:
    account_delete(account=free.account)
    anonymous = APIClient()

    assert_error(restore(anonymous, free.account.user_id), 403, SIGN_IN_REQUIRED)
    assert_error(erase(anonymous, free.account.user_id), 403, SIGN_IN_REQUIRED)
    assert Account.objects.get(pk=free.account.pk).deleted_at is not None


def test_an_api_key_is_not_a_staff_session(startup: Client, free: Client) -> None:
    account_delete(account=free.account)

    answer = startup.http.post(f"/api/v1/admin/users/{free.account.user_id}/restore", HTTP_X_API_KEY=startup.api_key)
    answer_erase = startup.http.delete(
        f"/api/v1/admin/users/{free.account.user_id}/permanent", HTTP_X_API_KEY=startup.api_key
    )

    assert_error(answer, 403, SIGN_IN_REQUIRED)
    assert_error(answer_erase, 403, SIGN_IN_REQUIRED)
    assert Account.objects.filter(pk=free.account.pk).exists()


def test_a_holders_session_is_not_staff(startup: Client, free: Client) -> None:
    holder = APIClient()
    holder.force_login(startup.account.user)

    assert_error(erase(holder, free.account.user_id), 403, STAFF_ONLY)
    assert Account.objects.filter(pk=free.account.pk).exists()


def test_staff_need_the_csrf_token(staff_user: Any, free: Client) -> None:
    account_delete(account=free.account)
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(staff_user)

    answer = restore(browser, free.account.user_id)

    assert answer.status_code == 403
    assert answer.json()["error"].startswith("CSRF Failed")
    assert Account.objects.get(pk=free.account.pk).deleted_at is not None


@pytest.mark.parametrize("method", ["get", "put", "patch"])
def test_other_methods_are_405(staff: APIClient, free: Client, method: str) -> None:
    answer = getattr(staff, method)(f"/api/v1/admin/users/{free.account.user_id}/restore")

    assert answer.status_code == 405


def test_an_unknown_user_or_staff_without_an_account_is_404(staff: APIClient, staff_user: Any) -> None:
    assert_error(restore(staff, 987654), 404, "User not found")
    assert_error(erase(staff, staff_user.pk), 404, "User not found")
    assert get_user_model().objects.filter(pk=staff_user.pk).exists()


def test_a_view_only_staff_user_cannot_restore_an_account(make_staff: Callable[..., Any], free: Client) -> None:
    account_delete(account=free.account)
    viewer = admin_session(make_staff(*VIEW_ONLY))

    answer = restore(viewer, free.account.user_id)

    assert_error(answer, 403, MISSING_PERMISSION.format(permission="accounts.change_account"))
    assert Account.objects.get(pk=free.account.pk).deleted_at is not None
    assert free.get("/api/v1/ping").status_code == 403


def test_a_view_only_staff_user_cannot_erase_an_account(make_staff: Callable[..., Any], free: Client) -> None:
    job = with_everything(free)
    viewer = admin_session(make_staff(*VIEW_ONLY))

    answer = erase(viewer, free.account.user_id)

    assert_error(answer, 403, MISSING_PERMISSION.format(permission="accounts.delete_account"))
    assert Account.objects.filter(pk=free.account.pk).exists()
    assert Job.objects.filter(id=job.id).exists()
    assert DeliveryLog.objects.filter(job_id=job.id).count() == 2


def test_a_staff_user_with_change_account_may_restore_but_not_erase(
    make_staff: Callable[..., Any], free: Client
) -> None:
    account_delete(account=free.account)
    support = admin_session(make_staff("accounts.change_account"))

    refused = erase(support, free.account.user_id)
    restored = restore(support, free.account.user_id)

    assert_error(refused, 403, MISSING_PERMISSION.format(permission="accounts.delete_account"))
    assert restored.status_code == 200
    assert Account.objects.get(pk=free.account.pk).deleted_at is None


def test_a_staff_user_with_delete_account_may_erase_but_not_restore(
    make_staff: Callable[..., Any], free: Client
) -> None:
    account_delete(account=free.account)
    eraser = admin_session(make_staff("accounts.delete_account"))

    refused = restore(eraser, free.account.user_id)

    assert_error(refused, 403, MISSING_PERMISSION.format(permission="accounts.change_account"))
    assert Account.objects.get(pk=free.account.pk).deleted_at is not None

    erased = erase(eraser, free.account.user_id)

    assert erased.status_code == 200
    assert not Account.objects.filter(pk=free.account.pk).exists()


# --- restore ----------------------------------------------------------------------------------------


def test_restore_lets_the_user_sign_in_and_their_key_work_again(staff: APIClient, free: Client) -> None:
    free.account.user.set_password("pw-of-the-holder")
    free.account.user.save()
    account_delete(account=free.account)
    assert free.get("/api/v1/ping").status_code == 403

    answer = restore(staff, free.account.user_id)

    assert answer.status_code == 200
    assert answer.json()["data"] == {
        "userId": free.account.user_id,
        "email": free.account.user.email,
        "isActive": True,
        "deletedAt": None,
    }
    assert free.get("/api/v1/ping").status_code == 200
    assert APIClient().login(username=free.account.user.username, password="pw-of-the-holder")


def test_restoring_an_account_that_is_not_deleted_is_409(staff: APIClient, free: Client) -> None:
    assert_error(restore(staff, free.account.user_id), 409, "This account is not deleted")


# --- permanent ------------------------------------------------------------------------------------


def test_permanent_removes_the_user_and_everything_of_theirs_and_nothing_else(
    staff: APIClient, free: Client, startup: Client
) -> None:
    job = with_everything(free)
    other_job = with_everything(startup)
    user_id = free.account.user_id

    answer = erase(staff, user_id)

    assert answer.status_code == 200
    assert answer.json()["data"] == {
        "userId": user_id,
        "email": free.account.user.email,
        "deleted": {
            "jobs": 1,
            "deliveryLogs": 2,
            "attachments": 1,
            "events": 1,
            "domains": 0,
            "domainRegistrations": 0,
            "apiKeys": 1,
            "providerKeys": 0,
        },
        "warnings": [],
    }
    assert not get_user_model().objects.filter(pk=user_id).exists()
    assert not Account.objects.filter(pk=free.account.pk).exists()
    for model in (ApiKey, SigningSecret, UsagePeriod, DailyTally, TrackingCredentials, EmailEvent):
        assert not model.objects.filter(account_id=free.account.pk).exists(), model
    assert not Job.objects.filter(id=job.id).exists()
    assert not DeliveryLog.objects.filter(job_id=job.id).exists()
    assert not Attachment.objects.filter(job_id=job.id).exists()
    assert DeliveryLog.objects.filter(job_id=other_job.id).count() == 2
    assert Attachment.objects.filter(job_id=other_job.id).count() == 1
    assert EmailEvent.objects.filter(account=startup.account).count() == 1
    assert startup.get("/api/v1/ping").status_code == 200
    assert_error(erase(staff, user_id), 404, "User not found")


def test_permanent_removes_the_domain_at_every_provider(
    staff: APIClient, make_client: Any, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    paid = with_keys(make_client("indie"), "SENDGRID", "RESEND")
    assert request_domain(paid).status_code == 201
    assert sendgrid.domains
    assert resend.domains

    answer = erase(staff, paid.account.user_id)

    assert answer.status_code == 200
    deleted = answer.json()["data"]["deleted"]
    assert (deleted["domains"], deleted["domainRegistrations"], deleted["providerKeys"]) == (1, 2, 2)
    assert sendgrid.domains == {}
    assert resend.domains == {}
    assert not SenderDomain.objects.exists()
    assert not DomainRegistration.objects.exists()
    assert not ProviderKey.objects.exists()


def test_a_provider_that_cannot_remove_the_domain_is_named_and_the_rest_still_goes(
    staff: APIClient, make_client: Any, sendgrid: FakeSendGrid
) -> None:
    paid = with_keys(make_client("indie"), "SENDGRID")
    assert request_domain(paid).status_code == 201
    sendgrid.fail(500, endpoint="domain_delete")

    answer = erase(staff, paid.account.user_id)

    assert answer.status_code == 200
    (warning,) = answer.json()["data"]["warnings"]
    assert warning["provider"] == "SENDGRID"
    assert warning["reason"].startswith("500")
    assert not Account.objects.filter(pk=paid.account.pk).exists()


@pytest.fixture
def user_deletion_fails() -> Any:
    """The database refuses to delete users: a trigger, so the failure comes from the database itself."""
    if connection.vendor == "postgresql":
        create = [
            "CREATE FUNCTION refuse_user_delete() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ "
            "LANGUAGE plpgsql",
            "CREATE TRIGGER refuse_user_delete BEFORE DELETE ON auth_user FOR EACH ROW "
            "EXECUTE FUNCTION refuse_user_delete()",
        ]
        drop = ["DROP TRIGGER refuse_user_delete ON auth_user", "DROP FUNCTION refuse_user_delete()"]
    else:
        create = [
            "CREATE TRIGGER refuse_user_delete BEFORE DELETE ON auth_user BEGIN SELECT RAISE(ABORT, 'refused'); END"
        ]
        drop = ["DROP TRIGGER refuse_user_delete"]
    with connection.cursor() as cursor:
        for statement in create:
            cursor.execute(statement)
    yield
    with connection.cursor() as cursor:
        for statement in drop:
            cursor.execute(statement)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("user_deletion_fails")
def test_the_database_part_is_all_or_nothing(staff: APIClient, free: Client) -> None:
    job = with_everything(free)

    answer = erase(staff, free.account.user_id)

    assert answer.status_code == 500
    assert Job.objects.filter(id=job.id).exists()
    assert DeliveryLog.objects.filter(job_id=job.id).count() == 2
    assert EmailEvent.objects.filter(job_id=job.id).count() == 1
    assert Account.objects.filter(pk=free.account.pk).exists()
