"""The events page: the account's event endpoints, adding one, a test event to one, deleting one after a question,
and the latest deliveries."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client as Browser
from django.utils import timezone

from accounts.models import Account
from accounts.services import signing_secret_generate
from core.crypto import decrypt
from core.errors import EventEndpointLimit
from core.signals import AccountEvent
from core.signing import verify_signature
from event_endpoints.models import Event, EventDelivery, EventDeliveryStatus, EventEndpoint
from event_endpoints.services import endpoint_create, events_emit
from notifications.models import Job
from notifications.services import LOCAL_URL_MESSAGE
from tests.conftest import Client
from tests.dashboard.pages import page_html, page_text
from tests.fakes.receiver import Receiver, Reply

Holder = tuple[Browser, Account]
URL = "https://hooks.example.com/notifyhub/events"
NOT_HTTPS = "url must be a valid HTTPS URL"


def add(browser: Browser, url: str = URL, events: list[str] | None = None, **kwargs: Any) -> Any:
    return browser.post("/dashboard/events/", {"url": url, "events": events or []}, **kwargs)


def stored(account: Account) -> list[tuple[str, list[str]]]:
    return [(endpoint.url, endpoint.events) for endpoint in EventEndpoint.objects.filter(account=account)]


def endpoint_rows(response: Any) -> list[str]:
    """The endpoints' rows as a reader sees them, in the list's order."""
    table = re.search(r'<table class="event-endpoints">.*?</table>', response.content.decode(), re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0), re.S) if table else []
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip() for row in rows[1:]]


def delivery_rows(response: Any) -> list[str]:
    table = re.search(r'<table class="event-deliveries">.*?</table>', response.content.decode(), re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0), re.S) if table else []
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip() for row in rows[1:]]


def field_error(field: str, message: str) -> str:
    return f'<ul class="errorlist" id="id_{field}_error" role="alert"><li>{message}</li></ul>'


# --- the page ---------------------------------------------------------------------------------------


def test_the_page_needs_a_signed_in_holder(browser: Browser, free: Client) -> None:
    endpoint = endpoint_create(account=free.account, url=URL, events=["job.failed"])

    for path in ["/dashboard/events/", f"/dashboard/events/delete/?id={endpoint.id}"]:
        response = browser.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=/dashboard/events/")
    for path, body in [
        ("/dashboard/events/", {"url": URL, "events": ["job.completed"]}),
        ("/dashboard/events/test/", {"id": str(endpoint.id)}),
        ("/dashboard/events/delete/", {"id": str(endpoint.id)}),
    ]:
        response = browser.post(path, body)
        assert (response.status_code, response["Location"]) == (302, f"/login/?next={path}")
    assert stored(free.account) == [(URL, ["job.failed"])]


def test_the_list_shows_only_the_holders_endpoints_oldest_first(holder: Holder, free: Client) -> None:
    browser, account = holder
    endpoint_create(account=account, url=URL, events=["job.completed", "job.failed"])
    endpoint_create(account=account, url="https://ada:s3cret@audit.example.org/in", events=["suppression.created"])
    endpoint_create(account=free.account, url="https://theirs.example.net/hook", events=["job.failed"])

    page = browser.get("/dashboard/events/")
    text = page_text(page)

    assert page.status_code == 200
    assert "2 of 5 endpoints, oldest first." in text
    assert "Endpoint Added (UTC) Actions" in text
    rows = endpoint_rows(page)
    assert len(rows) == 2
    assert re.fullmatch(
        rf"{URL} job.completed, job.failed \w{{3}} \d{{1,2}}, \d{{4}}, \d\d:\d\d Send test event Delete…", rows[0]
    )
    # The credentials are kept encrypted and never shown, as the API shows the URL.
    assert rows[1].startswith("https://***@audit.example.org/in suppression.created ")
    assert "s3cret" not in page_html(page)
    assert "theirs.example.net" not in text


def test_the_page_says_what_an_endpoint_is_and_has_nothing_yet(holder: Holder) -> None:
    browser, _ = holder

    text = page_text(browser.get("/dashboard/events/"))

    assert "An event endpoint is an HTTPS URL of yours that NotifyHub POSTs an event to" in text
    assert "No event endpoint yet: add one below" in text
    assert "No event has been sent yet." in text


def test_the_add_form_offers_each_event_type_by_its_name(holder: Holder) -> None:
    browser, _ = holder

    html = page_html(browser.get("/dashboard/events/"))

    boxes = re.findall(r'<input type="checkbox" name="events" value="([^"]+)" id="id_events_\d+"', html)
    assert boxes == [
        "job.completed",
        "job.failed",
        "email.delivered",
        "email.opened",
        "email.clicked",
        "email.bounced",
        "email.spam_report",
        "email.unsubscribed",
        "email.deferred",
        "suppression.created",
        "endpoint.failing",
        "endpoint.disabled",
    ]
    assert "<legend>Event types</legend>" in html
    assert re.search(r'<label for="id_events_1"><input [^>]*value="job.failed"[^>]*> job.failed</label>', html)


def test_the_navigation_marks_the_page_as_current_next_to_suppressions(holder: Holder) -> None:
    browser, account = holder
    endpoint = endpoint_create(account=account, url=URL, events=["job.failed"])
    link = '<a href="/dashboard/events/" aria-current="page">Events</a>'

    assert link in page_html(browser.get("/dashboard/events/"))
    assert link in page_html(browser.get("/dashboard/events/delete/", {"id": str(endpoint.id)}))
    jobs = page_html(browser.get("/dashboard/jobs/"))
    assert link not in jobs
    assert re.search(r">Suppressions</a></li> <li><a href=\"/dashboard/events/\">Events</a></li>", jobs)


# --- adding -----------------------------------------------------------------------------------------


def test_adding_an_endpoint_stores_the_chosen_types_and_lists_it(holder: Holder) -> None:
    browser, account = holder

    answer = add(browser, f"  {URL} ", ["job.failed", "email.bounced"], follow=True)

    assert answer.redirect_chain == [("/dashboard/events/", 302)]
    assert stored(account) == [(URL, ["job.failed", "email.bounced"])]
    assert Account.objects.get(pk=account.pk).has_event_endpoints
    assert f"{URL} now receives job.failed, email.bounced events." in page_text(answer)
    assert endpoint_rows(answer)[0].startswith(f"{URL} job.failed, email.bounced ")


def test_a_url_with_credentials_is_stored_masked_with_them_encrypted(holder: Holder) -> None:
    browser, account = holder

    answer = add(browser, "https://ada:s3cret@hooks.example.com/in", ["job.completed"])

    assert answer.status_code == 302
    endpoint = EventEndpoint.objects.get(account=account)
    assert endpoint.url == "https://***@hooks.example.com/in"
    assert endpoint.url_credentials is not None
    assert decrypt(endpoint.url_credentials) == "ada:s3cret"


def test_no_event_type_chosen_is_refused_and_stores_nothing(holder: Holder) -> None:
    browser, account = holder

    answer = add(browser, URL, [])

    assert answer.status_code == 400
    assert field_error("events", "Choose at least one event type") in page_html(answer)
    assert f'value="{URL}"' in page_html(answer)  # the URL typed is kept
    assert stored(account) == []


def test_an_unknown_event_type_is_refused_in_the_apis_words(holder: Holder) -> None:
    browser, account = holder

    answer = add(browser, URL, ["job.failed", "job.exploded"])

    assert answer.status_code == 400
    assert field_error("events", "Unknown event type: job.exploded") in page_html(answer)
    assert stored(account) == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", NOT_HTTPS),
        ("not a url", NOT_HTTPS),
        ("http://hooks.example.com/in", NOT_HTTPS),
        ("ftp://hooks.example.com/in", NOT_HTTPS),
        ("https://", NOT_HTTPS),
        (f"https://hooks.example.com/{'a' * 2030}", NOT_HTTPS),  # 2,057 characters: longer than 2,048
        ("https://127.0.0.1/hook", LOCAL_URL_MESSAGE),
        ("https://localhost:8443/hook", LOCAL_URL_MESSAGE),
        ("https://[::1]/hook", LOCAL_URL_MESSAGE),
        ("https://10.1.2.3/hook", LOCAL_URL_MESSAGE),
    ],
)
def test_a_bad_url_is_refused_with_the_apis_message(holder: Holder, settings: Any, url: str, message: str) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    browser, account = holder

    answer = add(browser, url, ["job.failed"])

    assert answer.status_code == 400
    assert field_error("url", message) in page_html(answer)
    assert stored(account) == []


def test_the_apis_messages_are_the_pages(startup: Client, settings: Any) -> None:
    """The page's URL messages above are what POST /api/v1/event-endpoints answers for the same URLs."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False

    for url, message in [("http://hooks.example.com/in", NOT_HTTPS), ("https://127.0.0.1/hook", LOCAL_URL_MESSAGE)]:
        answer = startup.post("/api/v1/event-endpoints", {"url": url, "events": ["job.failed"]})
        assert answer.status_code == 400
        assert message in json.dumps(answer.json())


def test_the_sixth_endpoint_is_refused_with_the_limit_message(holder: Holder) -> None:
    browser, account = holder
    for number in range(5):
        endpoint_create(account=account, url=f"https://hooks.example.com/{number}", events=["job.failed"])

    answer = add(browser, "https://hooks.example.com/6", ["job.completed"])

    assert answer.status_code == 400
    assert f'<ul class="errorlist nonfield" role="alert"><li>{EventEndpointLimit.message}</li></ul>' in page_html(
        answer
    )
    assert "5 of 5 endpoints, oldest first." in page_text(answer)
    assert EventEndpoint.objects.filter(account=account).count() == 5
    assert not EventEndpoint.objects.filter(url="https://hooks.example.com/6").exists()


def test_adding_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)

    assert add(browser, URL, ["job.failed"]).status_code == 403
    assert stored(startup.account) == []


# --- deleting ---------------------------------------------------------------------------------------


def test_delete_asks_first_and_deletes_only_once_confirmed(holder: Holder) -> None:
    browser, account = holder
    kept = endpoint_create(account=account, url="https://kept.example.com/in", events=["job.completed"])
    endpoint = endpoint_create(account=account, url=URL, events=["job.failed", "email.bounced"])
    delete_link = f'action="/dashboard/events/delete/"> <input type="hidden" name="id" value="{endpoint.id}">'
    assert delete_link in page_html(browser.get("/dashboard/events/"))

    question = browser.get("/dashboard/events/delete/", {"id": str(endpoint.id)})

    assert question.status_code == 200
    text = page_text(question)
    assert "Delete this event endpoint? NotifyHub stops sending events to it at once" in text
    assert f"{URL} job.failed, email.bounced · added " in text
    assert f'<input type="hidden" name="id" value="{endpoint.id}">' in page_html(question)
    assert EventEndpoint.objects.filter(account=account).count() == 2

    answer = browser.post("/dashboard/events/delete/", {"id": str(endpoint.id)}, follow=True)

    assert answer.redirect_chain == [("/dashboard/events/", 302)]
    assert f"{URL} is deleted: it receives no more events." in page_text(answer)
    assert stored(account) == [(kept.url, ["job.completed"])]
    assert [row.split(" ")[0] for row in endpoint_rows(answer)] == [kept.url]
    assert Account.objects.get(pk=account.pk).has_event_endpoints


def test_deleting_the_last_endpoint_takes_its_deliveries(holder: Holder) -> None:
    browser, account = holder
    endpoint = endpoint_create(account=account, url=URL, events=["job.failed"])
    events_emit(account_id=account.pk, emitted=[AccountEvent("job.failed", {"id": "j1"})])
    assert EventDelivery.objects.filter(endpoint=endpoint).count() == 1

    answer = browser.post("/dashboard/events/delete/", {"id": str(endpoint.id)})

    assert answer.status_code == 302
    assert not EventEndpoint.objects.filter(account=account).exists()
    assert not EventDelivery.objects.exists()
    assert not Account.objects.get(pk=account.pk).has_event_endpoints
    assert delivery_rows(browser.get("/dashboard/events/")) == []


@pytest.mark.parametrize("endpoint_id", ["theirs", "not-a-uuid", "", "a3b9c2d4-0000-4000-8000-000000000000"])
def test_another_accounts_endpoint_or_no_endpoint_is_not_found(holder: Holder, free: Client, endpoint_id: str) -> None:
    browser, _ = holder
    theirs = endpoint_create(account=free.account, url="https://theirs.example.net/hook", events=["job.failed"])
    endpoint_id = str(theirs.id) if endpoint_id == "theirs" else endpoint_id

    question = browser.get("/dashboard/events/delete/", {"id": endpoint_id})
    deletion = browser.post("/dashboard/events/delete/", {"id": endpoint_id})
    test = browser.post("/dashboard/events/test/", {"id": endpoint_id})

    for answer in (question, deletion, test):
        assert answer.status_code == 404
        assert "There is nothing at this address, or it belongs to another account." in page_text(answer)
        assert "theirs.example.net" not in page_text(answer)
    assert stored(free.account) == [("https://theirs.example.net/hook", ["job.failed"])]


def test_deleting_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)
    endpoint = endpoint_create(account=startup.account, url=URL, events=["job.failed"])

    assert browser.post("/dashboard/events/delete/", {"id": str(endpoint.id)}).status_code == 403
    assert stored(startup.account) == [(URL, ["job.failed"])]


# --- a test event -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("delivery_settings")
def test_a_test_event_reaches_the_endpoint_signed_and_the_page_shows_the_answer(
    holder: Holder, receiver: Receiver
) -> None:
    browser, account = holder
    secret = signing_secret_generate(account=account)
    endpoint = endpoint_create(account=account, url=receiver.url("/events"), events=["job.failed"])
    receiver.script("/events", Reply(status=202, body=b'{"queued":true}'))

    page = browser.post("/dashboard/events/test/", {"id": str(endpoint.id)})

    (arrival,) = receiver.wait_for(1)
    event = json.loads(arrival.body)
    assert (arrival.method, arrival.path) == ("POST", "/events")
    assert event["type"] == "notifyhub.test"
    assert verify_signature(secret, arrival.headers["X-Webhook-Signature"], arrival.body)
    text = page_text(page)
    assert page.status_code == 200
    assert "Your endpoint answered 202 in" in text
    assert "an event would be delivered." in text
    assert f"Sent to {receiver.url('/events')}" in text
    assert f"Signature sent X-Webhook-Signature: {arrival.headers['X-Webhook-Signature']}" in text
    assert '{"queued":true}' in text
    # A test is neither a job nor a delivery, and the endpoint stays as it was.
    assert not Job.objects.filter(account=account).exists()
    assert not EventDelivery.objects.exists()
    assert endpoint_rows(page)[0].startswith(f"{receiver.url('/events')} job.failed ")


@pytest.mark.usefixtures("delivery_settings")
def test_a_test_event_goes_with_the_urls_stored_credentials(holder: Holder, receiver: Receiver) -> None:
    browser, account = holder
    url = receiver.url("/events").replace("https://", "https://ada:s3cret@")
    endpoint = endpoint_create(account=account, url=url, events=["job.failed"])

    page = browser.post("/dashboard/events/test/", {"id": str(endpoint.id)})

    (arrival,) = receiver.wait_for(1)
    assert arrival.headers["Authorization"] == "Basic YWRhOnMzY3JldA=="  # ada:s3cret
    assert page.status_code == 200
    assert "s3cret" not in page_html(page)
    assert f"Sent to {receiver.url('/events').replace('https://', 'https://***@')}" in page_text(page)


@pytest.mark.usefixtures("delivery_settings")
def test_a_failing_endpoint_is_reported_with_its_status(holder: Holder, receiver: Receiver) -> None:
    browser, account = holder
    endpoint = endpoint_create(account=account, url=receiver.url("/events"), events=["job.failed"])
    receiver.script("/events", Reply(status=500, body=b"boom"))

    text = page_text(browser.post("/dashboard/events/test/", {"id": str(endpoint.id)}))

    assert "Your endpoint answered 500 in" in text
    assert "an event would fail this attempt (500 Internal Server Error)." in text
    assert "Signature not sent This account has no signing secret" in text


@pytest.mark.usefixtures("delivery_settings")
def test_a_test_to_an_address_now_refused_says_why(holder: Holder, receiver: Receiver, settings: Any) -> None:
    browser, account = holder
    endpoint = endpoint_create(account=account, url=receiver.url("/events"), events=["job.failed"])
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False

    page = browser.post("/dashboard/events/test/", {"id": str(endpoint.id)})

    assert page.status_code == 400
    assert LOCAL_URL_MESSAGE in page_text(page)
    assert receiver.arrivals == []


@pytest.mark.usefixtures("delivery_settings")
def test_tests_share_the_webhooks_pages_limit_of_ten_a_minute(holder: Holder, receiver: Receiver) -> None:
    browser, account = holder
    endpoint = endpoint_create(account=account, url=receiver.url("/events"), events=["job.failed"])
    webhook_tests = [
        browser.post("/dashboard/webhooks/", {"action": "send-test-webhook", "url": receiver.url()}).status_code
        for _ in range(4)
    ]

    answers = [browser.post("/dashboard/events/test/", {"id": str(endpoint.id)}) for _ in range(7)]

    assert webhook_tests == [200] * 4
    assert [answer.status_code for answer in answers] == [200] * 6 + [429]
    assert "You have sent 10 test webhooks this minute. Try again in" in page_text(answers[-1])
    assert len(receiver.wait_for(10)) == 10


def test_a_test_needs_the_csrf_token(startup: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(startup.account.user)
    endpoint = endpoint_create(account=startup.account, url=URL, events=["job.failed"])

    assert browser.post("/dashboard/events/test/", {"id": str(endpoint.id)}).status_code == 403


# --- recent deliveries ------------------------------------------------------------------------------


def test_recent_deliveries_lists_an_emitted_event(holder: Holder) -> None:
    browser, account = holder
    endpoint_create(account=account, url=URL, events=["job.failed"])
    (delivery,) = events_emit(account_id=account.pk, emitted=[AccountEvent("job.failed", {"id": "j1"})])

    page = browser.get("/dashboard/events/")

    assert page.status_code == 200
    assert "Event Status Attempts Last error Created (UTC)" in page_text(page)
    assert re.fullmatch(rf"job.failed to {URL} pending 0 \w{{3}} \d{{1,2}}, \d\d:\d\d:\d\d", delivery_rows(page)[0])
    assert '<span class="badge">pending</span>' in page_html(page)
    assert EventDelivery.objects.get().pk == delivery.pk


def test_recent_deliveries_are_the_accounts_latest_twenty_newest_first(holder: Holder, free: Client) -> None:
    browser, account = holder
    endpoint = endpoint_create(account=account, url=URL, events=["job.failed", "email.bounced"])
    theirs = endpoint_create(account=free.account, url="https://theirs.example.net/hook", events=["job.failed"])
    now = timezone.now()
    for minutes in range(22):
        event = Event.objects.create(account=account, type="job.failed", data={"n": minutes})
        EventDelivery.objects.create(
            event=event,
            endpoint=endpoint,
            status=EventDeliveryStatus.COMPLETED,
            attempts=1,
            response_status=200,
            created_at=now - timedelta(minutes=minutes + 1),
        )
    failed = Event.objects.create(account=account, type="email.bounced", data={})
    EventDelivery.objects.create(
        event=failed,
        endpoint=endpoint,
        status=EventDeliveryStatus.FAILED,
        attempts=3,
        response_status=503,
        error_message="503 Service Unavailable",
        created_at=now,
    )
    their_event = Event.objects.create(account=free.account, type="job.failed", data={})
    EventDelivery.objects.create(event=their_event, endpoint=theirs, created_at=now + timedelta(minutes=1))

    page = browser.get("/dashboard/events/")
    rows = delivery_rows(page)

    assert len(rows) == 20
    assert rows[0].startswith(f"email.bounced to {URL} failed 3 503 Service Unavailable ")
    assert all(row.startswith(f"job.failed to {URL} completed 1 ") for row in rows[1:])
    assert '<span class="badge bad">failed</span>' in page_html(page)
    assert '<span class="badge ok">completed</span>' in page_html(page)
    assert "The latest 20, newest first" in page_text(page)
    assert "theirs.example.net" not in page_text(page)
