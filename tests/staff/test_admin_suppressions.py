"""The console's suppression lists: each account's addresses, read-only, taken off with Django's delete permission."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import Client as DjangoClient

from suppressions.models import Suppression, SuppressionReason
from suppressions.services import Reported, suppressions_record
from tests.clients import APIClient
from tests.conftest import Client
from tests.dashboard.pages import page_text
from tests.factories import FailedJobFactory
from tests.staff.conftest import VIEW_ONLY
from tests.staff.test_admin_console import ACCOUNTS, console, offered_actions

SUPPRESSIONS = "/admin/suppressions/suppression/"


def bounced(client: Client, *emails: str) -> list[Suppression]:
    """The account's email to each address hard-bounced at SendGrid, as the provider-event receivers record it."""
    job = FailedJobFactory(account=client.account, type="email")
    reported = [Reported(email, SuppressionReason.HARD_BOUNCE, "SENDGRID", job.id) for email in emails]
    suppressions_record(account=client.account, reported=reported, emits_events=False)
    return list(Suppression.objects.filter(account=client.account, email__in=emails))


def of_account(client: Client, **filters: str) -> dict[str, Any]:
    return {"account__id__exact": str(client.account.pk), **filters}


def delete_selected(browser: DjangoClient, *suppressions: Suppression) -> Any:
    chosen = [suppression.pk for suppression in suppressions]
    return browser.post(
        SUPPRESSIONS, {"action": "delete_selected", "_selected_action": chosen, "post": "yes"}, follow=True
    )


def test_the_accounts_list_links_to_each_accounts_suppressions(staff: APIClient, free: Client) -> None:
    page = staff.get(ACCOUNTS).content.decode()

    assert f'href="{SUPPRESSIONS}?account__id__exact={free.account.pk}">suppressions</a>' in page


def test_staff_see_an_accounts_suppressions_and_no_other_accounts(
    staff: APIClient, free: Client, startup: Client
) -> None:
    job_id = bounced(free, "gone@example.com")[0].job_id
    free.post("/api/v1/suppressions", {"email": "Asked@Example.com"})
    bounced(startup, "theirs@example.com")

    text = page_text(staff.get(SUPPRESSIONS, of_account(free)))

    assert f"gone@example.com {free.account} Hard Bounce SendGrid {job_id}" in text
    assert f"asked@example.com {free.account} Manual - -" in text
    assert "theirs@example.com" not in text


def test_suppressions_are_filtered_by_reason_and_found_by_address(staff: APIClient, free: Client) -> None:
    bounced(free, "gone@example.com", "lost@example.com")
    free.post("/api/v1/suppressions", {"email": "asked@example.com"})

    by_reason = page_text(staff.get(SUPPRESSIONS, of_account(free, reason__exact="MANUAL")))
    by_address = page_text(staff.get(SUPPRESSIONS, {"q": "LOST@"}))

    assert "asked@example.com" in by_reason
    assert "gone@example.com" not in by_reason
    assert "lost@example.com" in by_address
    assert "gone@example.com" not in by_address


def test_the_list_takes_as_few_queries_for_many_suppressions_as_for_one(
    staff: APIClient, free: Client, startup: Client, django_assert_max_num_queries: Any
) -> None:
    bounced(free, *(f"user{n}@example.com" for n in range(40)))
    bounced(startup, "theirs@example.com")

    # The session, the user, the list's two counts and its page: no query per row for its account or holder.
    with django_assert_max_num_queries(5):
        page = staff.get(SUPPRESSIONS)

    assert page.status_code == 200
    assert all(f"user{n}@example.com" in page_text(page) for n in range(40))
    assert startup.account.user.email in page_text(page)


def test_suppressions_are_not_added_or_edited_by_hand(staff: APIClient, free: Client) -> None:
    suppression = bounced(free, "gone@example.com")[0]

    added = staff.get(f"{SUPPRESSIONS}add/")
    edited = staff.post(f"{SUPPRESSIONS}{suppression.pk}/change/", {"email": "other@example.com", "reason": "MANUAL"})

    assert added.status_code == 403
    assert edited.status_code == 403
    assert Suppression.objects.values_list("email", "reason").get() == ("gone@example.com", "HARD_BOUNCE")


def test_staff_take_an_address_off_with_djangos_delete(staff: APIClient, free: Client) -> None:
    gone, kept = bounced(free, "gone@example.com", "kept@example.com")

    done = delete_selected(staff, gone)

    assert "Successfully deleted 1 suppression." in page_text(done)
    assert list(Suppression.objects.values_list("email", flat=True)) == [kept.email]


def test_a_view_only_staff_user_sees_suppressions_but_cannot_delete_one(
    make_staff: Callable[..., Any], free: Client
) -> None:
    suppression = bounced(free, "gone@example.com")[0]
    viewer = console(make_staff(*VIEW_ONLY))

    listing = viewer.get(SUPPRESSIONS, of_account(free))
    posted = delete_selected(viewer, suppression)
    delete_page = viewer.post(f"{SUPPRESSIONS}{suppression.pk}/delete/", {"post": "yes"})

    assert listing.status_code == 200
    assert "gone@example.com" in page_text(listing)
    assert offered_actions(listing) == set()
    assert posted.status_code == 200
    assert delete_page.status_code == 403
    assert Suppression.objects.filter(pk=suppression.pk).exists()


def test_a_staff_user_with_delete_suppression_may_delete(make_staff: Callable[..., Any], free: Client) -> None:
    suppression = bounced(free, "gone@example.com")[0]
    remover = console(make_staff("suppressions.view_suppression", "suppressions.delete_suppression"))

    offered = offered_actions(remover.get(SUPPRESSIONS))
    done = delete_selected(remover, suppression)

    assert offered == {"delete_selected"}
    assert "Successfully deleted 1 suppression." in page_text(done)
    assert not Suppression.objects.exists()


def test_staff_without_the_view_permission_see_no_suppressions(make_staff: Callable[..., Any], free: Client) -> None:
    bounced(free, "gone@example.com")

    page = console(make_staff("accounts.view_account")).get(SUPPRESSIONS)

    assert page.status_code == 403
