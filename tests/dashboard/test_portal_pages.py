"""The consumer portal's pages (docs/customer-webhooks.md, "Consumer portal"): a link opens a session of one app,
whose customer manages its endpoints and reads its messages there, each change in the holder's audit log as
`portal:<app>`; forged, expired and other apps' addresses refused with no detail; CSRF on every form; the link's
token in no log line."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.http import HttpResponse
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account, AuditEntry
from accounts.services import account_delete
from customer_webhooks.models import App, Endpoint
from customer_webhooks.portal import LINK_SALT, SESSION_SALT, PortalGrant, portal_grant_read, portal_link_create
from dashboard.views.portal import SESSION_COOKIE
from notifications.models import Job, JobStatus
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text
from tests.factories import ENDPOINT_SECRET, AppFactory, DeliveryLogFactory, EndpointFactory, message_sent

PORTAL = "/portal/"
ACTOR = "portal:customer-1"


@pytest.fixture
def account(startup: Client) -> Account:
    startup.account.product_name = "Acme Cloud"
    startup.account.save(update_fields=["product_name"])
    return startup.account


@pytest.fixture
def app(account: Account) -> App:
    return AppFactory(account=account, uid="customer-1", name="Globex Corp")


@pytest.fixture
def endpoint(app: App) -> Endpoint:
    return EndpointFactory(app=app, url="https://hooks.globex.example/in", event_types=["invoice.paid"])


def link_path(app: App) -> str:
    return urlsplit(portal_link_create(app=app).url).path


def opened(app: App, browser: Browser | None = None) -> Browser:
    """A browser that followed a portal link of the app."""
    browser = browser or Browser()
    assert browser.get(link_path(app)).status_code == 302
    return browser


def portal_entries(account: Account) -> list[tuple[str, str]]:
    entries = AuditEntry.objects.filter(account=account, actor__startswith="portal:").order_by("id")
    return list(entries.values_list("action", "actor"))


# --- Opening the link -----------------------------------------------------------------------------------------------


def test_the_link_opens_a_session_of_its_own_and_redirects_to_a_url_without_the_token(app: App) -> None:
    browser = Browser()

    opened_link = browser.get(link_path(app))

    assert opened_link.status_code == 302
    assert opened_link["Location"] == PORTAL
    assert opened_link["Referrer-Policy"] == "no-referrer"
    assert opened_link["Cache-Control"] == "no-store"
    cookie = opened_link.cookies[SESSION_COOKIE]
    assert (cookie["path"], cookie["httponly"], cookie["samesite"]) == (PORTAL, True, "Lax")
    assert (cookie["expires"], cookie["max-age"]) == ("", "")  # the browser's session; the expiry is signed in it
    assert "sessionid" not in opened_link.cookies
    page = browser.get(PORTAL)
    assert page.status_code == 200
    assert page["Referrer-Policy"] == "same-origin"
    text = page_text(page)
    assert "Webhooks for Globex Corp" in text
    assert "Acme Cloud" in text
    assert "Acme Cloud" in page_html(page).split("<title>")[1].split("</title>")[0]
    # No NotifyHub navigation: nothing of the holder's dashboard, nor its sign-in.
    for word in ("Dashboard", "Sign in", "API keys", "Audit log", "NotifyHub"):
        assert word not in text


def test_a_blank_product_name_names_no_product(app: App, account: Account) -> None:
    account.product_name = ""
    account.save(update_fields=["product_name"])

    text = page_text(opened(app).get(PORTAL))

    assert "Acme Cloud" not in text
    assert "Webhooks for Globex Corp" in text


def test_an_expired_link_says_to_ask_for_a_new_one(app: App, account: Account) -> None:
    past = timezone.now() - timedelta(seconds=1)
    token = PortalGrant(app_id=app.id, account_id=account.id, issued_at=past, expires_at=past).sign(LINK_SALT)

    page = Browser().get(f"{PORTAL}{token}/")

    assert page.status_code == 403
    assert "This link has expired" in page_text(page)
    assert "Ask Acme Cloud for a new one" in page_text(page)
    assert SESSION_COOKIE not in page.cookies


def test_a_session_whose_time_is_up_says_so_too(app: App, account: Account) -> None:
    browser = Browser()
    past = timezone.now() - timedelta(seconds=1)
    browser.cookies[SESSION_COOKIE] = PortalGrant(
        app_id=app.id, account_id=account.id, issued_at=past, expires_at=past
    ).sign(SESSION_SALT)

    page = browser.get(PORTAL)

    assert page.status_code == 403
    assert "This link has expired" in page_text(page)


def test_forged_links_and_no_session_are_refused_with_no_detail(app: App, account: Account) -> None:
    other = AppFactory(account=account, uid="other")
    token = urlsplit(portal_link_create(app=app).url).path.split("/")[2]
    payload, signature = token.split(".")
    now = timezone.now()
    forged = PortalGrant(app_id=other.id, account_id=account.id, issued_at=now, expires_at=now + timedelta(hours=1))
    browser = Browser()

    for bad in (f"{payload}.{signature[:-2]}AA", f"{forged.sign(LINK_SALT).split('.')[0]}.{signature}", "made-up"):
        page = browser.get(f"{PORTAL}{bad}/")
        assert page.status_code == 404
        assert "This link is not valid" in page_text(page)
        assert "Globex" not in page_text(page)
        assert SESSION_COOKIE not in page.cookies
        assert page["Referrer-Policy"] == "no-referrer"
    # A session value is not a link, and a link is not a session.
    assert browser.get(f"{PORTAL}{forged.sign(SESSION_SALT)}/").status_code == 404
    browser.cookies[SESSION_COOKIE] = forged.sign(LINK_SALT)
    assert browser.get(PORTAL).status_code == 403
    assert Browser().get(PORTAL).status_code == 403


def test_a_deleted_app_closes_its_sessions_and_links(app: App) -> None:
    path = link_path(app)
    browser = opened(app)
    app.delete()

    assert browser.get(PORTAL).status_code == 404
    assert Browser().get(path).status_code == 404


def test_a_deleted_account_closes_its_portals(app: App, account: Account) -> None:
    path = link_path(app)
    browser = opened(app)
    account_delete(account=account)

    assert browser.get(PORTAL).status_code == 404
    assert Browser().get(path).status_code == 404


def test_the_portals_session_is_apart_from_the_dashboards(app: App, account: Account) -> None:
    holder = Browser()
    holder.force_login(account.user)
    opened(app, holder)

    assert holder.get("/dashboard/apps/").status_code == 200
    assert holder.get(PORTAL).status_code == 200
    customer = opened(app)
    assert customer.get("/dashboard/apps/").status_code == 302
    assert customer.get(f"/dashboard/apps/{app.id}/").status_code == 302


def test_the_links_token_is_in_no_log_line(app: App, caplog: pytest.LogCaptureFixture) -> None:
    path = link_path(app)
    token = path.split("/")[2]
    past = timezone.now() - timedelta(seconds=1)
    expired = PortalGrant(app_id=app.id, account_id=app.account_id, issued_at=past, expires_at=past).sign(LINK_SALT)

    with caplog.at_level(logging.INFO):
        Browser().get(path)
        Browser().get(f"{PORTAL}{expired}/")
        Browser().get(f"{PORTAL}{token[:-2]}AA/")

    assert "/portal/***/" in caplog.text
    for secret in (token, expired, token[:-2]):
        assert secret not in caplog.text


# --- What the customer does -----------------------------------------------------------------------------------------


def test_the_customer_adds_an_endpoint_and_the_audit_log_names_the_portal(app: App, account: Account) -> None:
    browser = opened(app)
    fields = {"url": "https://hooks.globex.example/new", "event_types": "invoice.paid, invoice.failed"}

    added = browser.post(PORTAL, {**fields, "description": "", "rate_limit": ""})

    endpoint = Endpoint.objects.get(app=app)
    assert added.status_code == 302
    assert added["Location"] == f"{PORTAL}endpoints/{endpoint.id}/"
    assert endpoint.url == "https://hooks.globex.example/new"
    assert endpoint.event_types == ["invoice.paid", "invoice.failed"]
    assert portal_entries(account) == [("endpoint.created", ACTOR)]
    page = browser.get(added["Location"])
    assert page.status_code == 200
    assert "is added" in page_text(page)


def test_a_refused_field_is_shown_beside_it_with_the_input_kept(app: App) -> None:
    browser = opened(app)

    fields = {"url": "https://10.0.0.1/in", "event_types": "", "description": "", "rate_limit": ""}

    refused = browser.post(PORTAL, fields)

    assert refused.status_code == 400
    assert "url must not point to a local or private network address" in page_text(refused)
    assert 'value="https://10.0.0.1/in"' in page_html(refused)
    assert not Endpoint.objects.filter(app=app).exists()


def test_the_customer_edits_disables_enables_and_deletes_an_endpoint(
    app: App, account: Account, endpoint: Endpoint
) -> None:
    browser = opened(app)
    page = f"{PORTAL}endpoints/{endpoint.id}/"
    fields = {"url": "https://hooks.globex.example/v2", "event_types": "", "description": "v2", "rate_limit": "5"}

    assert browser.post(page, fields).status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.event_types, endpoint.rate_limit) == ("https://hooks.globex.example/v2", [], 5)
    assert browser.post(f"{page}disable/").status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.disabled
    assert browser.post(f"{page}enable/").status_code == 302
    endpoint.refresh_from_db()
    assert not endpoint.disabled
    question = browser.get(f"{page}delete/")
    assert "Delete this endpoint?" in page_text(question)
    assert browser.post(f"{page}delete/")["Location"] == PORTAL
    assert not Endpoint.objects.filter(id=endpoint.id).exists()
    assert portal_entries(account) == [
        ("endpoint.updated", ACTOR),
        ("endpoint.updated", ACTOR),
        ("endpoint.updated", ACTOR),
        ("endpoint.deleted", ACTOR),
    ]


def test_a_form_left_open_after_its_endpoint_was_deleted_says_so(app: App, endpoint: Endpoint) -> None:
    browser = opened(app)
    page = f"{PORTAL}endpoints/{endpoint.id}/"
    endpoint.delete()

    stale = browser.post(page, {"url": "https://hooks.globex.example/v2", "event_types": "", "description": ""})

    assert stale.status_code == 404
    assert "may have been deleted" in page_text(stale)
    assert stale["Referrer-Policy"] == "same-origin"


def test_the_customer_reveals_and_rotates_the_secret(app: App, account: Account, endpoint: Endpoint) -> None:
    browser = opened(app)
    page = f"{PORTAL}endpoints/{endpoint.id}/"

    revealed = browser.post(f"{page}secret/")

    assert revealed.status_code == 200
    assert revealed["Cache-Control"] == "no-store"
    assert ENDPOINT_SECRET in page_text(revealed)
    assert "Keep this secret on the server that receives the deliveries only" in page_text(revealed)
    assert "Rotate this endpoint's secret?" in page_text(browser.get(f"{page}rotate/"))
    rotated = browser.post(f"{page}rotate/")
    assert rotated.status_code == 200
    assert "New signing secret" in page_text(rotated)
    assert ENDPOINT_SECRET not in page_text(rotated)
    assert portal_entries(account) == [("endpoint.secret_revealed", ACTOR), ("endpoint.secret_rotated", ACTOR)]


def test_another_apps_endpoint_or_message_is_refused_and_left_alone(app: App, account: Account) -> None:
    other_app = AppFactory(account=account, uid="other")
    other = EndpointFactory(app=other_app, url="https://other.example/in")
    sent = message_sent(app=other_app, event_type="invoice.paid", payload={})
    browser = opened(app)

    for path in ("", "secret/", "disable/", "delete/"):
        answer = browser.post(f"{PORTAL}endpoints/{other.id}/{path}")
        assert answer.status_code == 404, path
        assert "other.example" not in page_text(answer)
    assert browser.get(f"{PORTAL}endpoints/{other.id}/").status_code == 404
    assert browser.get(f"{PORTAL}messages/{sent.message.id}/").status_code == 404
    other.refresh_from_db()
    assert not other.disabled
    assert portal_entries(account) == []


def test_the_customer_reads_a_messages_attempts_and_resends_a_failed_delivery(
    app: App, account: Account, endpoint: Endpoint
) -> None:
    sent = message_sent(app=app, event_type="invoice.paid", payload={"invoice": "in_1"})
    job = sent.deliveries[0]
    Job.objects.filter(id=job.id).update(status=JobStatus.FAILED, attempts=1, error_message="503 Service Unavailable")
    DeliveryLogFactory(job_id=job.id, attempt=1, response_status=503, duration_ms=41)
    browser = opened(app)

    listed = browser.get(PORTAL)
    assert "invoice.paid" in page_text(listed)
    page = browser.get(f"{PORTAL}messages/{sent.message.id}/")
    assert page.status_code == 200
    text = page_text(page)
    assert "Attempts to https://hooks.globex.example/in" in text
    assert "503" in text
    assert "41 ms" in text
    assert "503 Service Unavailable" in text
    assert "/dashboard/jobs/" not in page_html(page)

    resent = browser.post(f"{PORTAL}messages/{sent.message.id}/deliveries/{job.id}/resend/")

    assert resent["Location"] == f"{PORTAL}messages/{sent.message.id}/#deliveries"
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING
    assert "The delivery is queued again" in page_text(browser.get(resent["Location"]))
    # Queued already: nothing to resend, and the page says why.
    again = browser.post(f"{PORTAL}messages/{sent.message.id}/deliveries/{job.id}/resend/", follow=True)
    assert "Job not found or cannot be retried (must be in failed status)" in page_text(again)
    other = message_sent(app=AppFactory(account=account), event_type="x.y", payload={})
    assert browser.post(f"{PORTAL}messages/{other.message.id}/deliveries/{job.id}/resend/").status_code == 404
    assert browser.post(f"{PORTAL}messages/{sent.message.id}/deliveries/{other.message.id}/resend/").status_code == 404


def test_the_customer_recovers_failed_deliveries_since_a_time(app: App, endpoint: Endpoint) -> None:
    browser = opened(app)
    since = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")

    recovered = browser.post(f"{PORTAL}endpoints/{endpoint.id}/recover/", {"since": since}, follow=True)

    assert recovered.status_code == 200
    assert "nothing to recover" in page_text(recovered)


def test_every_form_needs_its_csrf_token(app: App, endpoint: Endpoint) -> None:
    browser = Browser(enforce_csrf_checks=True)
    opened(app, browser)
    page = f"{PORTAL}endpoints/{endpoint.id}/"

    refused = browser.post(f"{page}disable/")

    assert refused.status_code == 403
    endpoint.refresh_from_db()
    assert not endpoint.disabled
    token = browser.get(page).context["csrf_token"]
    assert browser.post(f"{page}disable/", {"csrfmiddlewaretoken": str(token)}).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.disabled


# --- The holder's product name ----------------------------------------------------------------------------------------


def test_the_holder_names_its_product_on_the_account_page_and_the_portal_shows_it(app: App, account: Account) -> None:
    holder = Browser()
    holder.force_login(account.user)
    form = holder.get("/dashboard/account/")
    assert 'value="Acme Cloud"' in page_html(form)
    assert "links you make for them (POST /api/v1/apps/{app}/portal)" in page_text(form)

    saved = holder.post("/dashboard/account/", {"product_name": "Globex Webhooks Hub"})

    assert saved.status_code == 302
    account.refresh_from_db()
    assert account.product_name == "Globex Webhooks Hub"
    entry = AuditEntry.objects.get(account=account, action="product_name.changed")
    assert (entry.actor, entry.target) == ("holder", "Globex Webhooks Hub")
    assert "Globex Webhooks Hub" in page_text(opened(app).get(PORTAL))
    assert holder.post("/dashboard/account/", {"product_name": "Globex Webhooks Hub"}).status_code == 302
    assert AuditEntry.objects.filter(action="product_name.changed").count() == 1


def test_a_product_name_too_long_or_on_two_lines_is_refused_with_the_input_kept(account: Account) -> None:
    holder = Browser()
    holder.force_login(account.user)

    long = holder.post("/dashboard/account/", {"product_name": "x" * 101})
    two_lines = holder.post("/dashboard/account/", {"product_name": "Acme\nCloud"})

    assert long.status_code == two_lines.status_code == 400
    assert "Enter at most 100 characters." in page_text(long)
    assert f'value="{"x" * 101}"' in page_html(long)
    assert "Enter the name on one line, without control characters." in page_text(two_lines)
    account.refresh_from_db()
    assert account.product_name == "Acme Cloud"


# --- The holder's links, and ending them ------------------------------------------------------------------------------


def signed_in(account: Account, **options: bool) -> Browser:
    holder = Browser(**options)
    holder.force_login(account.user)
    return holder


def linked(page: HttpResponse) -> str:
    """The link on the `Portal link` page, from its read-only field."""
    found = re.search(
        r'<textarea class="secret" id="portal-link" rows="3" readonly>([^<]+)</textarea>', page_html(page)
    )
    assert found is not None, page_html(page)
    return found.group(1)


def test_the_holders_portal_link_button_shows_a_new_link_once_which_opens_the_apps_portal(
    app: App, account: Account
) -> None:
    holder = signed_in(account)
    app_page = holder.get(f"/dashboard/apps/{app.id}/")
    assert f'action="/dashboard/apps/{app.id}/portal-link/"' in page_html(app_page)
    assert holder.get(f"/dashboard/apps/{app.id}/portal-link/").status_code == 405

    page = holder.post(f"/dashboard/apps/{app.id}/portal-link/")

    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    text = page_text(page)
    assert "Whoever holds this link manages this app's endpoints and reads their secrets" in text
    grant = portal_grant_read(linked(page).split("/")[-2])
    assert grant is not None
    assert grant.app_id == app.id
    assert f"It works until {grant.expires_at:%b %-d, %Y, %H:%M} UTC." in text
    assert (
        AuditEntry.objects.filter(account=account, action="portal_link.created").values_list("actor", "target").get()
    ) == ("holder", "customer-1")
    # Shown in this answer alone: in no message for the next page, nor in any page of the holder's.
    assert linked(page) not in holder.get(f"/dashboard/apps/{app.id}/").content.decode()
    customer = Browser()
    assert customer.get(urlsplit(linked(page)).path).status_code == 302
    assert "Webhooks for Globex Corp" in page_text(customer.get(PORTAL))
    assert "Portal link" not in page_text(customer.get(PORTAL))


def test_the_holders_portal_buttons_need_the_csrf_token_and_another_accounts_app_is_404(
    app: App, account: Account, free: Client
) -> None:
    holder = signed_in(account, enforce_csrf_checks=True)
    theirs = AppFactory(account=free.account, uid="theirs")

    assert holder.post(f"/dashboard/apps/{app.id}/portal-link/").status_code == 403
    assert holder.post(f"/dashboard/apps/{app.id}/portal-revoke/").status_code == 403
    token = str(holder.get(f"/dashboard/apps/{app.id}/portal-revoke/").context["csrf_token"])
    for action in ("portal-link", "portal-revoke"):
        path = f"/dashboard/apps/{theirs.id}/{action}/"
        assert holder.post(path, {"csrfmiddlewaretoken": token}).status_code == 404, path
    assert holder.get(f"/dashboard/apps/{theirs.id}/portal-revoke/").status_code == 404
    assert not AuditEntry.objects.filter(action__in=["portal_link.created", "portal_links.revoked"]).exists()
    assert holder.post(f"/dashboard/apps/{app.id}/portal-link/", {"csrfmiddlewaretoken": token}).status_code == 200


def test_ending_portal_sessions_asks_first_then_ends_earlier_links_and_sessions_not_later_links(
    app: App, account: Account
) -> None:
    holder = signed_in(account)
    unopened = link_path(app)
    customer = opened(app)
    assert customer.get(PORTAL).status_code == 200

    question = holder.get(f"/dashboard/apps/{app.id}/portal-revoke/")

    assert "End this app's portal sessions?" in page_text(question)
    assert App.objects.get(id=app.id).portal_revoked_at is None
    ended = holder.post(f"/dashboard/apps/{app.id}/portal-revoke/", follow=True)
    assert ended.redirect_chain == [(f"/dashboard/apps/{app.id}/#portal", 302)]
    assert "The portal links of app Globex Corp made until now are ended, with their sessions" in page_text(ended)
    entry = AuditEntry.objects.get(account=account, action="portal_links.revoked")
    assert (entry.actor, entry.target) == ("holder", "customer-1")
    # The open session on its next page, and a link made before, are told to ask for a new link.
    for page in (customer.get(PORTAL), customer.post(f"{PORTAL}", {"url": "https://hooks.globex.example/x"})):
        assert page.status_code == 403
        assert "This link has expired" in page_text(page)
        assert "Ask Acme Cloud for a new one" in page_text(page)
    late = Browser().get(unopened)
    assert late.status_code == 403
    assert "This link has expired" in page_text(late)
    assert SESSION_COOKIE not in late.cookies
    assert not Endpoint.objects.filter(app=app).exists()
    # A link made afterwards works, in the same browser too.
    assert opened(app, customer).get(PORTAL).status_code == 200
