"""Apps in the admin: read-only, each with its endpoints, never a secret (docs/customer-webhooks.md)."""

from __future__ import annotations

import pytest
from django.test import Client as DjangoClient

from core.crypto import encrypt
from customer_webhooks.models import App
from tests.conftest import Client
from tests.factories import ENDPOINT_SECRET, AppFactory, EndpointFactory

pytestmark = pytest.mark.django_db

APPS = "/admin/customer_webhooks/app/"


@pytest.fixture
def staff(django_user_model: type) -> DjangoClient:
    browser = DjangoClient()
    browser.force_login(django_user_model.objects.create_superuser("ops@notifyhub.local", "ops@notifyhub.local", "pw"))
    return browser


def test_an_apps_page_lists_its_endpoints_without_their_secrets(staff: DjangoClient, startup: Client) -> None:
    app = AppFactory(account=startup.account, uid="acme", name="Acme Inc")
    EndpointFactory(
        app=app,
        url="https://***@hooks.acme.example/in",
        url_credentials=encrypt("user:hunter2"),
        event_types=["invoice.paid"],
        previous_encrypted_secret=encrypt("whsec_previous"),
    )

    listed = staff.get(APPS, {"q": "acme"}).content.decode()
    page = staff.get(f"{APPS}{app.id}/change/").content.decode()

    assert "Acme Inc" in listed
    assert "https://***@hooks.acme.example/in" in page
    assert "invoice.paid" in page
    for secret in (ENDPOINT_SECRET, "whsec_previous", "hunter2"):
        assert secret not in page


def test_apps_are_not_added_changed_or_deleted_by_hand(staff: DjangoClient, startup: Client) -> None:
    app = AppFactory(account=startup.account, name="Acme Inc")

    assert staff.get(f"{APPS}add/").status_code == 403
    assert staff.post(f"{APPS}{app.id}/change/", {"name": "Renamed"}).status_code == 403
    assert staff.post(f"{APPS}{app.id}/delete/", {"post": "yes"}).status_code == 403
    assert App.objects.get(id=app.id).name == "Acme Inc"
