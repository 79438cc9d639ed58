"""The apps pages: the holder's apps listed, added, renamed and deleted; an app's endpoints added, changed, disabled,
enabled and deleted, their secrets revealed and rotated, their failed deliveries recovered; the app's recent messages
and each delivery (docs/dashboard.md, "The apps pages")."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account, AuditAction, AuditEntry
from core.crypto import decrypt
from customer_webhooks.messages import message_send
from customer_webhooks.models import App, Endpoint, Message
from customer_webhooks.selectors import app_get_with_enabled_endpoints
from notifications.engine.app_endpoints import FAILING, GONE
from notifications.models import Job, JobStatus
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text
from tests.factories import ENDPOINT_SECRET, AppFactory, EndpointFactory, FailedJobFactory

Holder = tuple[Browser, Account]
APPS = "/dashboard/apps/"


@pytest.fixture
def app(holder: Holder) -> App:
    return AppFactory(account=holder[1], uid="customer-1", name="Acme Inc.")


@pytest.fixture
def endpoint(app: App) -> Endpoint:
    return EndpointFactory(app=app, event_types=["invoice.paid"])


def app_path(app: App) -> str:
    return f"{APPS}{app.id}/"


def endpoint_path(endpoint: Endpoint) -> str:
    return f"{app_path(endpoint.app)}endpoints/{endpoint.id}/"


# What the apps pages change, in the audit log: the account's own first key is there before them.
APP_ACTIONS = [action for action in AuditAction.values if action.startswith(("app.", "endpoint."))]


def audited(account: Account) -> list[tuple[str, str, str]]:
    entries = AuditEntry.objects.filter(account=account, action__in=APP_ACTIONS).order_by("id")
    return list(entries.values_list("action", "actor", "target"))


def endpoint_fields(**fields: Any) -> dict[str, Any]:
    return {"url": "https://hooks.acme.example/in", "event_types": "", "description": "", "rate_limit": "", **fields}


# --- The list, adding, renaming, deleting ------------------------------------------------------------------------


def test_the_apps_pages_need_a_signed_in_holder(browser: Browser, app: App) -> None:
    for path in (APPS, app_path(app), f"{app_path(app)}edit/"):
        page = browser.get(path)
        assert page.status_code == 302
        assert page["Location"] == f"/login/?next={path}"


def test_the_list_shows_the_holders_apps_newest_first_25_a_page(holder: Holder, startup: Client, free: Client) -> None:
    browser, account = holder
    now = timezone.now()
    for number in range(26):
        AppFactory(account=account, name=f"Customer {number:02}", created_at=now - timedelta(minutes=number))
    AppFactory(account=free.account, name="Someone else's")

    first, second = browser.get(APPS), browser.get(f"{APPS}?page=2")

    assert first.status_code == second.status_code == 200
    names = re.findall(r">(Customer \d\d)</a>", page_html(first))
    assert names == [f"Customer {number:02}" for number in range(25)]
    assert re.findall(r">(Customer \d\d)</a>", page_html(second)) == ["Customer 25"]
    assert "26 apps, newest first." in page_text(first)
    assert "Someone else's" not in page_text(first) + page_text(second)
    assert '<a href="/dashboard/apps/" aria-current="page">Apps</a>' in page_html(first)
    assert browser.get(f"{APPS}?page=0").status_code == 400


def test_a_holder_adds_an_app_and_opens_it(holder: Holder) -> None:
    browser, account = holder

    page = browser.post(APPS, {"name": "Acme Inc.", "uid": "customer-1"}, follow=True)

    app = App.objects.get(account=account)
    assert (app.name, app.uid) == ("Acme Inc.", "customer-1")
    assert page.redirect_chain == [(app_path(app), 302)]
    assert "App Acme Inc. is added: add its endpoints below." in page_text(page)
    assert '<a href="/dashboard/apps/" aria-current="page">Apps</a>' in page_html(page)
    assert audited(account) == [(AuditAction.APP_CREATED, "holder", "customer-1")]
    browser.post(APPS, {"name": "No uid"})
    assert App.objects.get(account=account, name="No uid").uid is None


@pytest.mark.parametrize(
    ("fields", "field", "refusal"),
    [
        ({"name": ""}, "name", "name must not be empty"),
        ({"name": "A\nB"}, "name", "name must be a single line"),
        ({"name": "Acme", "uid": "has space"}, "uid", "uid must be 1 to 64 of A-Z, a-z, 0-9, ., _, : and -"),
        ({"name": "Acme", "uid": "0" * 32}, "uid", "uid must not be shaped like a UUID"),
        ({"name": "Acme", "uid": "customer-1"}, "uid", "An app with uid customer-1 exists already"),
    ],
)
def test_an_app_the_api_would_refuse_is_refused_beside_its_field(
    holder: Holder, app: App, fields: dict[str, str], field: str, refusal: str
) -> None:
    browser, account = holder

    page = browser.post(APPS, fields)

    assert page.status_code == 400
    assert f'<ul class="errorlist" id="id_{field}_error" role="alert"><li>{refusal}</li></ul>' in page_html(page)
    assert App.objects.filter(account=account).count() == 1
    if "uid" in fields:  # what was typed comes back
        assert f'value="{fields["uid"]}"' in page_html(page)


def test_a_holder_renames_an_app_and_changes_its_uid(holder: Holder, app: App) -> None:
    browser, account = holder
    assert 'value="customer-1"' in page_html(browser.get(f"{app_path(app)}edit/"))

    page = browser.post(f"{app_path(app)}edit/", {"name": "Acme Corp", "uid": "acme"}, follow=True)

    app.refresh_from_db()
    assert (app.name, app.uid) == ("Acme Corp", "acme")
    assert "App Acme Corp is saved." in page_text(page)
    assert audited(account) == [(AuditAction.APP_UPDATED, "holder", "acme")]


def test_an_apps_uid_can_be_changed_but_not_removed(holder: Holder, app: App) -> None:
    browser, _ = holder

    page = browser.post(f"{app_path(app)}edit/", {"name": "Acme Corp", "uid": ""})

    assert page.status_code == 400
    assert "An app's uid can be changed but not removed." in page_text(page)
    app.refresh_from_db()
    assert (app.name, app.uid) == ("Acme Inc.", "customer-1")


def test_deleting_an_app_asks_first_then_deletes_it_with_its_endpoints(
    holder: Holder, app: App, endpoint: Endpoint
) -> None:
    browser, account = holder

    question = browser.get(f"{app_path(app)}delete/")

    assert question.status_code == 200
    assert "Delete this app?" in page_text(question)
    assert App.objects.filter(id=app.id).exists()
    page = browser.post(f"{app_path(app)}delete/", follow=True)
    assert page.redirect_chain == [(APPS, 302)]
    assert "App Acme Inc. is deleted with its endpoints and messages." in page_text(page)
    assert not App.objects.filter(id=app.id).exists()
    assert not Endpoint.objects.filter(id=endpoint.id).exists()
    assert audited(account) == [(AuditAction.APP_DELETED, "holder", "customer-1")]


def test_another_accounts_app_and_endpoint_are_the_404_page_and_stay(
    holder: Holder, free: Client, app: App, endpoint: Endpoint
) -> None:
    browser, _ = holder
    theirs = AppFactory(account=free.account, uid="theirs")
    their_endpoint = EndpointFactory(app=theirs)
    # Their endpoint through my app's URL, too: an endpoint is looked up within the app.
    mine_with_theirs = f"{app_path(app)}endpoints/{their_endpoint.id}/"
    their_message = Message.objects.create(account=free.account, app=theirs, event_type="a.b", payload={})
    gets = [
        app_path(theirs),
        f"{app_path(theirs)}edit/",
        f"{app_path(theirs)}delete/",
        endpoint_path(their_endpoint),
        mine_with_theirs,
        f"{mine_with_theirs}delete/",
        f"{mine_with_theirs}rotate/",
        f"{app_path(app)}messages/{their_message.id}/",
    ]
    posts = [
        (app_path(theirs), endpoint_fields()),
        (f"{app_path(theirs)}edit/", {"name": "Mine now"}),
        (f"{app_path(theirs)}delete/", {}),
        (mine_with_theirs, endpoint_fields()),
        *((f"{mine_with_theirs}{action}/", {}) for action in ("disable", "delete", "secret", "rotate")),
        (f"{mine_with_theirs}recover/", {"since": "2026-01-01T00:00"}),
    ]

    for path in gets:
        assert browser.get(path).status_code == 404, path
    for path, fields in posts:
        page = browser.post(path, fields)
        assert page.status_code == 404, path
        assert ENDPOINT_SECRET not in page.content.decode()
    their_endpoint.refresh_from_db()
    assert App.objects.get(id=theirs.id).name == theirs.name
    assert (their_endpoint.disabled, their_endpoint.url) == (False, "https://hooks.example.com/customer")
    assert audited(free.account) == []


def test_every_form_carries_its_csrf_token_and_a_post_without_one_is_refused(
    holder: Holder, app: App, endpoint: Endpoint
) -> None:
    browser, account = holder
    for path in (APPS, app_path(app), endpoint_path(endpoint), f"{endpoint_path(endpoint)}rotate/"):
        html = page_html(browser.get(path))
        posting = re.findall(r'<form method="post".*?</form>', html)
        assert posting, path
        assert all('name="csrfmiddlewaretoken"' in form for form in posting), path
    strict = Browser(enforce_csrf_checks=True)
    strict.force_login(account.user)

    assert strict.post(f"{endpoint_path(endpoint)}secret/").status_code == 403
    assert strict.post(APPS, {"name": "Forged"}).status_code == 403
    assert not App.objects.filter(name="Forged").exists()


# --- An app's endpoints ------------------------------------------------------------------------------------------


def test_a_holder_adds_an_endpoint_with_its_types_description_and_rate_limit(holder: Holder, app: App) -> None:
    browser, account = holder
    fields = endpoint_fields(
        url="https://user:pw@hooks.acme.example/in",
        event_types="invoice.paid, invoice.failed\n user.signed-up",
        description="Billing",
        rate_limit="10",
    )

    page = browser.post(app_path(app), fields, follow=True)

    endpoint = Endpoint.objects.get(app=app)
    assert page.redirect_chain == [(endpoint_path(endpoint), 302)]
    assert endpoint.url == "https://***@hooks.acme.example/in"
    assert decrypt(endpoint.url_credentials or "") == "user:pw"
    assert endpoint.event_types == ["invoice.paid", "invoice.failed", "user.signed-up"]
    assert (endpoint.description, endpoint.rate_limit, endpoint.disabled) == ("Billing", 10, False)
    text = page_text(page)
    assert "Endpoint https://***@hooks.acme.example/in is added; its secret signs its deliveries." in text
    assert "user:pw" not in page.content.decode()
    assert audited(account) == [
        (AuditAction.ENDPOINT_CREATED, "holder", "https://hooks.acme.example/*** (app customer-1)")
    ]
    listed = page_text(browser.get(app_path(app)))
    assert "invoice.paid, invoice.failed, user.signed-up" in listed
    assert "10 a second" in listed


@pytest.mark.parametrize(
    ("fields", "field", "refusal"),
    [
        ({"url": "http://hooks.acme.example/in"}, "url", "url must be a valid HTTPS URL"),
        ({"url": "https://10.0.0.1/in"}, "url", "url must not point to a local or private network address"),
        ({"event_types": "invoice.paid Invoice.Paid"}, "event_types", "Invoice.Paid is not an event type"),
        ({"event_types": "a.b, a.b"}, "event_types", "a.b is named twice."),
        ({"event_types": " ".join(f"t{n}" for n in range(51))}, "event_types", "Name at most 50 event types."),
        ({"description": "x" * 501}, "description", "description must be at most 500 characters"),
        ({"rate_limit": "0"}, "rate_limit", "Enter a whole number of deliveries a second, from 1 to 1,000"),
        ({"rate_limit": "1001"}, "rate_limit", "Enter a whole number of deliveries a second, from 1 to 1,000"),
    ],
)
def test_an_endpoint_the_api_would_refuse_is_refused_beside_its_field_with_the_input_kept(
    holder: Holder, app: App, fields: dict[str, str], field: str, refusal: str
) -> None:
    browser, account = holder

    page = browser.post(app_path(app), endpoint_fields(**fields))

    assert page.status_code == 400
    assert re.search(rf'id="id_{field}_error" role="alert"><li>{re.escape(refusal)}', page_html(page)), page_text(page)
    assert not Endpoint.objects.filter(app=app).exists()
    assert audited(account) == []
    if field != "url":
        assert 'value="https://hooks.acme.example/in"' in page_html(page)


def test_an_apps_21st_endpoint_is_refused_in_the_services_words(holder: Holder, app: App) -> None:
    browser, _ = holder
    EndpointFactory.create_batch(20, app=app)

    page = browser.post(app_path(app), endpoint_fields())

    assert page.status_code == 400
    assert "An app may have at most 20 endpoints. Delete one first." in page_text(page)
    assert Endpoint.objects.filter(app=app).count() == 20


def test_a_holder_changes_an_endpoint(holder: Holder, endpoint: Endpoint) -> None:
    browser, account = holder
    form = page_html(browser.get(endpoint_path(endpoint)))
    assert 'value="invoice.paid"' in form

    page = browser.post(
        endpoint_path(endpoint),
        endpoint_fields(url="https://hooks.acme.example/v2", event_types="", rate_limit="5"),
        follow=True,
    )

    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.event_types, endpoint.rate_limit) == ("https://hooks.acme.example/v2", [], 5)
    assert "Endpoint https://hooks.acme.example/v2 is saved." in page_text(page)
    assert audited(account) == [
        (AuditAction.ENDPOINT_UPDATED, "holder", "https://hooks.acme.example/*** (app customer-1)")
    ]
    refused = browser.post(endpoint_path(endpoint), endpoint_fields(url="https://localhost/in"))
    assert refused.status_code == 400
    assert "url must not point to a local or private network address" in page_text(refused)


def test_saving_an_endpoint_whose_url_holds_credentials_keeps_them(holder: Holder, app: App) -> None:
    browser, _ = holder
    browser.post(app_path(app), endpoint_fields(url="https://user:pw@hooks.acme.example/in"))
    endpoint = Endpoint.objects.get(app=app)
    shown = page_html(browser.get(endpoint_path(endpoint)))
    assert 'value="https://***@hooks.acme.example/in"' in shown
    assert "user:pw" not in shown

    browser.post(endpoint_path(endpoint), endpoint_fields(url="https://***@hooks.acme.example/in", description="CRM"))

    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.description) == ("https://***@hooks.acme.example/in", "CRM")
    assert decrypt(endpoint.url_credentials or "") == "user:pw"
    browser.post(endpoint_path(endpoint), endpoint_fields(url="https://ops:new@hooks.acme.example/in"))
    endpoint.refresh_from_db()
    assert decrypt(endpoint.url_credentials or "") == "ops:new"


def test_the_app_page_says_why_notifyhub_disabled_an_endpoint(holder: Holder, app: App) -> None:
    browser, _ = holder
    EndpointFactory(app=app, url="https://gone.example/in", disabled=True, disabled_reason=GONE)
    EndpointFactory(app=app, url="https://down.example/in", disabled=True, disabled_reason=FAILING)
    EndpointFactory(app=app, url="https://paused.example/in", disabled=True)

    text = page_text(browser.get(app_path(app)))

    assert "Disabled by NotifyHub: it answered 410 Gone." in text
    assert "Disabled by NotifyHub: every delivery failed for 5 days." in text
    assert text.count("disabled") >= 3


def test_a_holder_disables_and_enables_an_endpoint_afresh(holder: Holder, endpoint: Endpoint) -> None:
    browser, account = holder
    Endpoint.objects.filter(id=endpoint.id).update(failing_since=timezone.now())

    disabled = browser.post(f"{endpoint_path(endpoint)}disable/", follow=True)

    endpoint.refresh_from_db()
    assert endpoint.disabled
    assert "is disabled: it receives nothing until enabled." in page_text(disabled)
    Endpoint.objects.filter(id=endpoint.id).update(disabled_reason=FAILING)
    enabled = browser.post(f"{endpoint_path(endpoint)}enable/", follow=True)
    endpoint.refresh_from_db()
    assert (endpoint.disabled, endpoint.disabled_reason, endpoint.failing_since) == (False, "", None)
    assert "is enabled: new messages go to it again." in page_text(enabled)
    assert [action for action, _, _ in audited(account)] == [AuditAction.ENDPOINT_UPDATED] * 2
    assert browser.get(f"{endpoint_path(endpoint)}disable/").status_code == 405


def test_deleting_an_endpoint_asks_first(holder: Holder, app: App, endpoint: Endpoint) -> None:
    browser, account = holder

    question = browser.get(f"{endpoint_path(endpoint)}delete/")

    assert "Delete this endpoint?" in page_text(question)
    page = browser.post(f"{endpoint_path(endpoint)}delete/", follow=True)
    assert page.redirect_chain == [(app_path(app), 302)]
    assert "Endpoint https://hooks.example.com/customer is deleted with its deliveries." in page_text(page)
    assert not Endpoint.objects.filter(id=endpoint.id).exists()
    assert audited(account) == [
        (AuditAction.ENDPOINT_DELETED, "holder", "https://hooks.example.com/*** (app customer-1)")
    ]


# --- Secrets -----------------------------------------------------------------------------------------------------


def test_the_secret_is_in_no_page_until_asked_and_then_in_one_no_store_answer(
    holder: Holder, app: App, endpoint: Endpoint
) -> None:
    browser, account = holder
    for path in (APPS, app_path(app), endpoint_path(endpoint), f"{endpoint_path(endpoint)}rotate/"):
        assert ENDPOINT_SECRET not in browser.get(path).content.decode(), path
    assert browser.get(f"{endpoint_path(endpoint)}secret/").status_code == 405

    page = browser.post(f"{endpoint_path(endpoint)}secret/")

    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    assert f'<code class="secret" id="endpoint-secret">{ENDPOINT_SECRET}</code>' in page_html(page)
    assert "Hand this secret to the endpoint's owner only" in page_text(page)
    assert ENDPOINT_SECRET not in browser.get(endpoint_path(endpoint)).content.decode()
    # Reading changes nothing, but whoever read the secret can sign as NotifyHub does: each reveal is recorded.
    target = "https://hooks.example.com/*** (app customer-1)"
    assert audited(account) == [(AuditAction.ENDPOINT_SECRET_REVEALED, "holder", target)]


def test_rotating_asks_first_then_shows_the_new_secret_once_the_old_one_signing_for_the_overlap(
    holder: Holder, endpoint: Endpoint, settings: Any
) -> None:
    browser, account = holder
    settings.SIGNING_SECRET_OVERLAP_SECONDS = 86400

    question = page_text(browser.get(f"{endpoint_path(endpoint)}rotate/"))

    assert "Rotate this endpoint's secret?" in question
    assert "The old one keeps signing beside it for 1 day" in question
    assert decrypt(Endpoint.objects.get(id=endpoint.id).encrypted_secret) == ENDPOINT_SECRET
    page = browser.post(f"{endpoint_path(endpoint)}rotate/")
    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    stored = Endpoint.objects.get(id=endpoint.id)
    new_secret = decrypt(stored.encrypted_secret)
    assert new_secret != ENDPOINT_SECRET
    assert new_secret.startswith("whsec_")
    assert decrypt(stored.previous_encrypted_secret) == ENDPOINT_SECRET
    assert f'id="endpoint-secret">{new_secret}</code>' in page_html(page)
    assert "New signing secret" in page_text(page)
    assert "The old secret keeps signing beside this one for 1 day." in page_text(page)
    assert audited(account) == [
        (AuditAction.ENDPOINT_SECRET_ROTATED, "holder", "https://hooks.example.com/*** (app customer-1)")
    ]


# --- Messages and recovery ---------------------------------------------------------------------------------------


def test_the_app_page_lists_its_live_messages_newest_first_25_a_page(holder: Holder, app: App) -> None:
    browser, account = holder
    now = timezone.now()
    for number in range(26):
        Message.objects.create(
            account=account,
            app=app,
            event_type=f"event.n{number:02}",
            payload={},
            created_at=now - timedelta(minutes=number),
        )
    Message.objects.create(account=account, app=app, event_type="event.test", payload={}, test=True)

    first, second = browser.get(app_path(app)), browser.get(f"{app_path(app)}?page=2")

    assert re.findall(r"<code>(event\.\w+)</code></a>", page_html(first)) == [f"event.n{n:02}" for n in range(25)]
    assert re.findall(r"<code>(event\.\w+)</code></a>", page_html(second)) == ["event.n25"]
    assert "26 messages sent with a live key, newest first." in page_text(first)
    assert "event.test" not in page_text(first) + page_text(second)


def test_a_message_page_shows_each_delivery_and_links_its_job(holder: Holder, app: App, endpoint: Endpoint) -> None:
    browser, account = holder
    EndpointFactory(app=app, url="https://other.example/in", event_types=["user.created"])
    _, enabled = app_get_with_enabled_endpoints(account=account, app=str(app.id))
    sent = message_send(
        account=account, app=app, enabled_endpoints=enabled, event_type="invoice.paid", payload={"invoice": "in_1"}
    )
    job = sent.deliveries[0]
    Job.objects.filter(id=job.id).update(
        status=JobStatus.PROCESSING, attempts=2, error_message="503 Service Unavailable"
    )
    test_message = message_send(
        account=account, app=app, enabled_endpoints=enabled, event_type="invoice.paid", payload={}, test=True
    )

    page = browser.get(f"{app_path(app)}messages/{sent.message.id}/")

    assert page.status_code == 200
    text, html = page_text(page), page_html(page)
    assert "Message invoice.paid" in text
    assert '"invoice": "in_1"' in text
    # Its delivery's row, then the heading of its attempts.
    assert text.count("https://hooks.example.com/customer") == 2
    assert "https://other.example/in" not in text
    assert "2 of 8" in text
    assert "503 Service Unavailable" in text
    assert f'<a href="/dashboard/jobs/{job.id}/"' in html
    assert browser.get(f"{app_path(app)}messages/{test_message.message.id}/").status_code == 404


def test_a_holder_recovers_an_endpoints_failed_live_deliveries_since_a_time(
    holder: Holder, endpoint: Endpoint, django_capture_on_commit_callbacks: Any
) -> None:
    browser, account = holder
    now = timezone.now()
    recent = [FailedJobFactory(account=account, endpoint=endpoint, created_at=now - timedelta(hours=1)) for _ in "ab"]
    older = FailedJobFactory(account=account, endpoint=endpoint, created_at=now - timedelta(hours=5))
    test_one = FailedJobFactory(account=account, endpoint=endpoint, created_at=now - timedelta(hours=1), test=True)
    since = (now - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")

    with django_capture_on_commit_callbacks(execute=True):
        page = browser.post(f"{endpoint_path(endpoint)}recover/", {"since": since}, follow=True)

    assert page.redirect_chain == [(endpoint_path(endpoint), 302)]
    assert re.search(
        r"2 deliveries that failed since \w{3} \d+, \d{4}, \d\d:\d\d UTC are queued again\.", page_text(page)
    )
    statuses = {job.id: Job.objects.get(id=job.id).status for job in [*recent, older, test_one]}
    assert [statuses[job.id] for job in recent] == [JobStatus.PENDING] * 2
    assert [statuses[job.id] for job in (older, test_one)] == [JobStatus.FAILED] * 2
    again = browser.post(f"{endpoint_path(endpoint)}recover/", {"since": since}, follow=True)
    assert "No delivery to this endpoint failed since" in page_text(again)
    # The recovery that re-queued two is recorded; the one that found none changed nothing.
    target = "https://hooks.example.com/*** (app customer-1)"
    assert audited(account) == [(AuditAction.ENDPOINT_RECOVERED, "holder", target)]


@pytest.mark.parametrize(
    ("since", "refusal"),
    [
        ("", "Enter the time to recover from."),
        ("yesterday", "Enter a date and time."),
        ("2999-01-01T00:00", "since must not be in the future"),
        ("2000-01-01T00:00", "since must be within the last 90 days"),
    ],
)
def test_a_recover_refused_says_why_beside_its_field(
    holder: Holder, endpoint: Endpoint, since: str, refusal: str
) -> None:
    browser, _ = holder

    page = browser.post(f"{endpoint_path(endpoint)}recover/", {"since": since})

    assert page.status_code == 400
    assert f'id="id_since_error" role="alert"><li>{refusal}</li>' in page_html(page)
