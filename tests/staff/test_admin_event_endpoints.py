"""The console's event endpoints: read-only, deleted with Django's delete permission through the service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import Client as DjangoClient

from accounts.models import Account
from event_endpoints.models import EventEndpoint
from event_endpoints.services import endpoint_create
from tests.clients import APIClient
from tests.conftest import Client
from tests.dashboard.pages import page_text
from tests.staff.conftest import VIEW_ONLY
from tests.staff.test_admin_console import console, offered_actions

ENDPOINTS = "/admin/event_endpoints/eventendpoint/"


def an_endpoint(client: Client) -> EventEndpoint:
    return endpoint_create(
        account=client.account, url="https://u:secret-pass@hooks.example.com/in", events=["job.failed"]
    )


def delete_selected(browser: DjangoClient, endpoint: EventEndpoint) -> Any:
    return browser.post(
        ENDPOINTS, {"action": "delete_selected", "_selected_action": [endpoint.pk], "post": "yes"}, follow=True
    )


def test_staff_see_endpoints_without_their_credentials(staff: APIClient, free: Client) -> None:
    endpoint = an_endpoint(free)

    listing = page_text(staff.get(ENDPOINTS))
    detail = staff.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()

    assert f"https://***@hooks.example.com/in {free.account}" in listing
    assert "secret-pass" not in detail
    assert endpoint.url_credentials is not None
    assert endpoint.url_credentials not in detail


def test_deleting_an_accounts_last_endpoint_in_the_console_says_it_has_none(staff: APIClient, free: Client) -> None:
    endpoint = an_endpoint(free)

    done = delete_selected(staff, endpoint)

    assert "Successfully deleted 1 event endpoint." in page_text(done)
    assert not EventEndpoint.objects.exists()
    assert not Account.objects.get(pk=free.account.pk).has_event_endpoints


def test_a_view_only_staff_user_cannot_add_change_or_delete_one(make_staff: Callable[..., Any], free: Client) -> None:
    endpoint = an_endpoint(free)
    viewer = console(make_staff(*VIEW_ONLY))

    listing = viewer.get(ENDPOINTS)
    delete_selected(viewer, endpoint)
    delete_page = viewer.post(f"{ENDPOINTS}{endpoint.pk}/delete/", {"post": "yes"})

    assert listing.status_code == 200
    assert offered_actions(listing) == set()
    assert viewer.get(f"{ENDPOINTS}add/").status_code == 403
    assert delete_page.status_code == 403
    assert EventEndpoint.objects.filter(pk=endpoint.pk).exists()
