from __future__ import annotations

import pytest
from django.test import Client as DjangoClient

from accounts.services import provider_key_set
from tests.conftest import Client
from tests.factories import DeliveryLogFactory, FailedJobFactory


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
