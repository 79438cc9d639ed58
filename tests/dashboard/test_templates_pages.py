"""The templates pages: list, create, edit (a new version), versions, preview in a sandboxed frame, a test email to
the holder's own address, delete (docs/dashboard.md, "The templates pages")."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client as Browser

from accounts.models import Account, AuditAction, AuditEntry, UsagePeriod
from accounts.services import account_set_monthly_limit
from email_templates.models import Template, TemplateVersion
from email_templates.services import template_create, template_update
from notifications.models import Job
from suppressions.services import suppression_add
from tests.conftest import Client, ready_to_send
from tests.dashboard.pages import page_html, page_text
from tests.fakes.providers import FakeSendGrid

Holder = tuple[Browser, Account]
# The preview frame's answer: the email's styles and images apply, sandboxed, framed by the dashboard alone.
FRAME_HEADERS = {
    "Content-Security-Policy": (
        "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; frame-ancestors 'self'"
    ),
    "X-Frame-Options": "SAMEORIGIN",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
}
# Every dashboard page's (docs/dashboard.md, "Content-Security-Policy"), the preview page's too.
STRICT_POLICY = {
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
}

WELCOME = {
    "alias": "welcome",
    "name": "Welcome email",
    "subject": "Welcome, {{ name }}",
    "html": "<h1>Hello {{ name }}</h1>\n<p>Your code is {{ code }}.</p>",
    "text": "Hello {{ name }}, your code is {{ code }}.",
}
DATA = {"name": "Ada", "code": "1234"}


def signed_in(client: Client) -> Holder:
    browser = Browser()
    browser.force_login(client.account.user)
    return browser, client.account


@pytest.fixture
def free_holder(free: Client) -> Holder:
    return signed_in(free)


def welcome(account: Account, **overrides: Any) -> Template:
    return template_create(account=account, **{**WELCOME, **overrides}).template


def path(template: Template, page: str = "") -> str:
    return f"/dashboard/templates/{template.id}/{page}"


def preview(browser: Browser, template: Template, data: Any = DATA, *, action: str = "preview") -> Any:
    text = data if isinstance(data, str) else json.dumps(data)
    return browser.post(path(template, "preview/"), {"sample_data": text, "action": action})


def frame_url(response: Any) -> str:
    """Where the preview page's frame loads the rendered HTML from."""
    (url,) = re.findall(r'<iframe sandbox src="([^"]+)"', page_html(response))
    return str(url)


# --- who may open them ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["", "new/", "{id}/", "{id}/versions/", "{id}/versions/1/", "{id}/preview/"])
def test_a_signed_out_visitor_is_sent_to_sign_in(browser: Browser, free: Client, page: str) -> None:
    url = "/dashboard/templates/" + page.format(id=welcome(free.account).id)

    response = browser.get(url)

    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={url}"


@pytest.mark.parametrize(
    ("method", "page"),
    [
        *[("get", page) for page in ("", "versions/", "versions/1/", "preview/", "delete/")],
        *[("post", page) for page in ("", "preview/", "delete/")],
    ],
)
def test_another_accounts_template_is_404_and_stays_as_it_was(
    holder: Holder, free: Client, method: str, page: str
) -> None:
    browser, _ = holder
    theirs = welcome(free.account)
    body = {**WELCOME, "sample_data": "{}", "action": "send-test"} if method == "post" else None

    response = getattr(browser, method)(path(theirs, page), body)

    assert response.status_code == 404
    assert TemplateVersion.objects.filter(template=theirs).count() == 1
    assert mail.outbox == []


def test_the_navigation_links_the_templates_page_and_marks_it_current(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)

    for url in ("/dashboard/templates/", path(template), path(template, "preview/")):
        html = page_html(browser.get(url))
        assert '<a href="/dashboard/templates/" aria-current="page">Templates</a>' in html
    assert '<a href="/dashboard/templates/">Templates</a>' in page_html(browser.get("/dashboard/"))


# --- the list --------------------------------------------------------------------------------------------------------


def test_an_account_without_templates_is_shown_how_to_start(free_holder: Holder) -> None:
    browser, _ = free_holder

    response = browser.get("/dashboard/templates/")

    assert response.status_code == 200
    assert "You have no templates yet." in page_text(response)
    assert '<a class="button" href="/dashboard/templates/new/">New template</a>' in page_html(response)


def test_the_list_shows_each_template_by_alias_with_its_current_version(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)
    template_update(template=template, subject="Hi {{ name }}", html="<p>{{ name }}</p>")
    welcome(account, alias="receipt", name="Receipt")

    response = browser.get("/dashboard/templates/")

    text = page_text(response)
    assert "2 templates, by alias." in text
    assert re.search(r"receipt Receipt version 1 · .* UTC 1 .*welcome Welcome email version 2 · .* UTC 2", text)
    assert f'href="{path(template)}"' in page_html(response)


def test_the_list_is_paged_25_at_a_time(free_holder: Holder) -> None:
    browser, account = free_holder
    for number in range(26):
        welcome(account, alias=f"t{number:02}")

    first, second = browser.get("/dashboard/templates/"), browser.get("/dashboard/templates/?page=2")

    assert "Page 1 of 2" in page_text(first)
    assert "t24" in page_text(first)
    assert "t25" not in page_text(first)
    assert "t25" in page_text(second)
    assert "No templates on this page." in page_text(browser.get("/dashboard/templates/?page=3"))
    refused = browser.get("/dashboard/templates/?page=0")
    assert refused.status_code == 400
    assert "Page: Ensure this value is greater than or equal to 1." in page_text(refused)


# --- create and edit -------------------------------------------------------------------------------------------------


def test_creating_stores_version_1_records_it_in_the_audit_log_and_opens_the_template(free_holder: Holder) -> None:
    browser, account = free_holder

    response = browser.post("/dashboard/templates/new/", {**WELCOME, "html": "<p>{{ name }}</p>\r\n<p>{{ code }}</p>"})

    template = Template.objects.get(account=account)
    assert response.status_code == 302
    assert response["Location"] == path(template)
    version = template.versions.get()
    assert (template.alias, template.name, version.version) == ("welcome", "Welcome email", 1)
    assert (version.subject, version.html, version.text) == (
        WELCOME["subject"],
        "<p>{{ name }}</p>\n<p>{{ code }}</p>",  # the browser's CR LF, as the API would be sent it
        WELCOME["text"],
    )
    assert version.variables == ["name", "code"]
    entry = AuditEntry.objects.get(account=account, action__startswith="template.")
    assert (entry.action, entry.actor, entry.target, entry.api_key_id) == (
        AuditAction.TEMPLATE_CREATED,
        "holder",
        "welcome",
        None,
    )
    assert "Template welcome is saved as version 1." in page_text(browser.get(response["Location"]))


def test_an_empty_text_part_is_none_and_made_from_the_html(free_holder: Holder) -> None:
    browser, account = free_holder

    browser.post("/dashboard/templates/new/", {**WELCOME, "text": ""})

    assert TemplateVersion.objects.get(template__account=account).text is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("alias", "Welcome!", "alias must be 1 to 64 of a-z, 0-9, _ and -"),
        ("alias", "0f8fad5b-d9cb-469f-a165-70867728950e", "alias must not be shaped like a template id"),
        ("name", "", "name must not be empty"),
        ("subject", "Two\nlines", "subject must be a single line"),
        ("html", " ", "html must not be empty"),
        ("html", "<p>{% if name %}</p>", "html has a syntax error on line 1: "),
        ("text", "ok\n{{ name | }}", "text has a syntax error on line 2: "),
    ],
)
def test_a_refused_template_says_why_in_the_apis_words_and_keeps_the_input(
    free_holder: Holder, field: str, value: str, message: str
) -> None:
    browser, account = free_holder

    response = browser.post("/dashboard/templates/new/", {**WELCOME, field: value})

    assert response.status_code == 400
    assert message in page_text(response)
    assert 'value="Welcome email"' in page_html(response) or field == "name"
    assert "Hello {{ name }}" in page_text(response) or field == "html"
    assert not Template.objects.filter(account=account).exists()


def test_an_alias_taken_is_said_on_the_alias(free_holder: Holder) -> None:
    browser, account = free_holder
    welcome(account)

    response = browser.post("/dashboard/templates/new/", WELCOME)

    assert response.status_code == 400
    assert 'id="id_alias_error" role="alert"><li>A template with alias welcome exists already</li>' in page_html(
        response
    )


def test_the_edit_page_shows_the_current_version_in_the_form(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)

    response = browser.get(path(template))

    text = page_text(response)
    assert response.status_code == 200
    assert "Version 1, saved" in text
    assert "Save version 2" in text
    assert "Hello {{ name }}" in text
    assert 'name="alias"' not in page_html(response)  # an alias is never changed


def test_saving_makes_a_new_version_and_keeps_the_old_one(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)
    new = {"name": "Welcome", "subject": "Hi {{ name }}", "html": "<p>Hi {{ name }}</p>", "text": ""}

    response = browser.post(path(template), new)

    assert response.status_code == 302
    assert response["Location"] == path(template)
    versions = {version.version: version for version in template.versions.all()}
    assert (versions[1].subject, versions[2].subject, versions[2].text) == (WELCOME["subject"], "Hi {{ name }}", None)
    template.refresh_from_db()
    assert template.name == "Welcome"
    updated = AuditEntry.objects.filter(account=account, action=AuditAction.TEMPLATE_UPDATED)
    assert list(updated.values_list("actor", "target", "api_key_id")) == [("holder", "welcome", None)]
    page = page_text(browser.get(path(template)))
    assert "Template welcome is saved as version 2." in page
    assert "Version 2, saved" in page


def test_a_refused_save_makes_no_version(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)

    response = browser.post(path(template), {**WELCOME, "html": "{% for x in items %}"})

    assert response.status_code == 400
    assert "html has a syntax error on line 1: " in page_text(response)
    assert "{% for x in items %}" in page_text(response)
    assert template.versions.count() == 1
    assert not AuditEntry.objects.filter(account=account, action=AuditAction.TEMPLATE_UPDATED).exists()


# --- versions --------------------------------------------------------------------------------------------------------


def test_the_versions_are_listed_newest_first_and_each_is_readable(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)
    template_update(template=template, subject="Hi {{ user }}", html="<p>{{ user }}</p>")

    listing = page_text(browser.get(path(template, "versions/")))
    older = browser.get(path(template, "versions/1/"))

    assert re.search(r"Version 2 current [^V]* user Version 1 [^V]* name, code", listing)
    text = page_text(older)
    assert older.status_code == 200
    assert "An older version" in text
    assert "Variables name , code" in text  # each in its <code>
    assert "Subject Welcome, {{ name }}" in text
    assert "<h1>Hello {{ name }}</h1>" in text  # the source, as text
    assert "&lt;h1&gt;Hello {{ name }}&lt;/h1&gt;" in page_html(older)
    assert "Hello {{ name }}, your code is {{ code }}." in text
    assert "<form" not in page_html(older).split("</header>")[1]  # read only
    assert browser.get(path(template, "versions/3/")).status_code == 404


# --- preview ---------------------------------------------------------------------------------------------------------


def test_the_preview_frames_the_html_from_its_own_answer_with_the_subject_and_text_beside_it(
    free_holder: Holder,
) -> None:
    browser, account = free_holder
    template = welcome(account, html='<p title="t">{{ name }}</p><script>parent.alert(1)</script>')

    response = preview(browser, template, {"name": '"><script>x</script>', "code": "1234"})

    html = page_html(response)
    assert response.status_code == 200
    (frame,) = re.findall(r"<iframe [^>]*>", html)
    url = frame_url(response)
    assert re.fullmatch(rf"/dashboard/templates/{template.id}/preview/[A-Za-z0-9_-]{{22}}/", url)
    # An empty sandbox attribute, as the frame's own policy says again: no script, an opaque origin of its own.
    assert frame == f'<iframe sandbox src="{url}" title="The email\'s HTML part, rendered" class="preview-frame">'
    assert html.count("<script") == 1  # notifyhub.js; nothing of the template's
    text = page_text(response)
    assert 'Subject Welcome, "><script>x</script>' in text
    assert 'Hello "><script>x</script>, your code is 1234.' in text
    email = browser.get(url)
    assert email.status_code == 200
    assert email["Content-Type"] == "text/html; charset=utf-8"
    assert email.content.decode() == (
        '<p title="t">&#34;&gt;&lt;script&gt;x&lt;/script&gt;</p><script>parent.alert(1)</script>'
    )
    assert mail.outbox == []


def test_the_frame_answers_under_a_policy_of_its_own_and_the_page_keeps_its_strict_one(
    free_holder: Holder,
) -> None:
    browser, account = free_holder
    template = welcome(account, html="<style>h1 { color: rgb(200, 0, 0) }</style><h1>Hello {{ name }}</h1>")
    response = preview(browser, template)

    email = browser.get(frame_url(response))

    assert "<h1 style=" in email.content.decode()  # css-inline's attribute, which this policy lets apply
    assert {name: email.get(name) for name in FRAME_HEADERS} == FRAME_HEADERS
    assert set(response["Content-Security-Policy"].split("; ")) == STRICT_POLICY
    assert response["X-Frame-Options"] == "DENY"


def test_only_the_latest_preview_of_the_holders_own_template_is_framed(free_holder: Holder, startup: Client) -> None:
    browser, account = free_holder
    template, other = welcome(account), welcome(account, alias="other")
    theirs_browser, _ = signed_in(startup)
    theirs = welcome(startup.account)
    first = frame_url(preview(browser, template))
    latest = frame_url(preview(browser, template))
    their_frame = frame_url(preview(theirs_browser, theirs))

    assert browser.get(latest).status_code == 200
    for gone in (first, latest.replace(str(template.id), str(other.id)), path(template, "preview/unknown/")):
        answer = browser.get(gone)
        assert answer.status_code == 404
        assert answer.content.decode() == "This preview is no longer kept: press Preview again."
        assert answer["Content-Security-Policy"] == FRAME_HEADERS["Content-Security-Policy"]
    # Another account's template is the 404 page, whatever token, as on every template route.
    assert browser.get(their_frame).status_code == 404
    assert "This preview is no longer kept" not in page_text(browser.get(their_frame))
    assert theirs_browser.get(their_frame).status_code == 200


def test_the_frame_needs_a_signed_in_holder_and_answers_get_only(free_holder: Holder) -> None:
    browser, account = free_holder
    url = frame_url(preview(browser, welcome(account)))

    assert browser.post(url).status_code == 405
    response = Browser().get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={url}"


def test_a_preview_needs_the_csrf_token(free: Client) -> None:
    browser = Browser(enforce_csrf_checks=True)
    browser.force_login(free.account.user)

    response = preview(browser, welcome(free.account))

    assert response.status_code == 403
    assert "<iframe" not in page_html(response)


def test_the_preview_form_lists_the_variables_and_starts_with_an_empty_object(free_holder: Holder) -> None:
    browser, account = free_holder

    text = page_text(browser.get(path(welcome(account), "preview/")))

    assert "Renders version 1 with your sample data" in text
    assert "It reads name , code." in text  # each in its <code>
    assert "Sample data (JSON) {}" in text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{", "data must be valid JSON"),
        ("", "data is required"),
        ("[1]", "data must be an object"),
        (json.dumps({"name": "x" * 70_000}), "data must be at most 64 KB"),
        ("[" * 70 + "]" * 70, "data must be an object"),
        ('{"a":' * 70 + "1" + "}" * 70, "Request body must not be nested more than 64 levels deep"),
        (json.dumps({"code": "1"}), "data is missing name for template welcome"),
        (json.dumps({"name": {"first": "Ada"}}), "data is missing code for template welcome"),
    ],
)
def test_refused_sample_data_is_said_on_the_form_in_the_apis_words(
    free_holder: Holder, data: str, message: str
) -> None:
    browser, account = free_holder
    template = welcome(account)

    response = preview(browser, template, data)

    assert response.status_code == 400
    assert message in page_text(response)
    assert "<iframe" not in page_html(response)


def test_a_template_that_cannot_render_is_a_message_never_a_500(free_holder: Holder) -> None:
    browser, account = free_holder
    bomb = "{% for a in (1..1000) %}{% for b in (1..1000) %}x{% endfor %}{% endfor %}"
    template = welcome(account, html=bomb, text=None)

    response = preview(browser, template, {"name": "Ada", "code": "1"})

    assert response.status_code == 400
    assert "Template welcome could not be rendered: html: loop iteration limit reached" in page_text(response)


# --- send a test -----------------------------------------------------------------------------------------------------


def test_a_test_email_goes_to_the_holders_own_address_as_their_email_goes(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)

    response = preview(browser, template, action="send-test")

    (message,) = mail.outbox  # the Free plan's email, with no platform provider set: Django's backend
    assert message.to == [account.user.email]
    assert message.from_email == "noreply@notifyhub.local"
    assert message.subject == "Welcome, Ada"
    assert "<h1>Hello Ada</h1>" in message.alternatives[0][0]  # type: ignore[attr-defined]
    assert message.body == "Hello Ada, your code is 1234."
    assert response.status_code == 200
    text = page_text(response)
    assert f"Sent to {account.user.email} from noreply@notifyhub.local in" in text
    assert "check your inbox." in text
    assert "<iframe sandbox" in page_html(response)
    # No job; on Free, whose quota counts every email, a unit as any email it sends.
    assert not Job.objects.filter(account=account).exists()
    assert UsagePeriod.objects.get(account=account).used == 1


def test_a_test_email_beyond_the_free_quota_is_refused(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)
    account_set_monthly_limit(account=account, limit=1)
    assert preview(browser, template, action="send-test").status_code == 200

    response = preview(browser, template, action="send-test")

    assert response.status_code == 403
    assert "Monthly usage limit exceeded (1/1). Upgrade your plan or wait for reset on" in page_text(response)
    assert len(mail.outbox) == 1
    assert UsagePeriod.objects.get(account=account).used == 1


def test_a_paid_plans_test_email_spends_no_quota(startup: Client, sendgrid: FakeSendGrid) -> None:
    browser, account = signed_in(ready_to_send(startup))

    assert preview(browser, welcome(account), action="send-test").status_code == 200

    assert len(sendgrid.sent) == 1
    assert not UsagePeriod.objects.filter(account=account, used__gt=0).exists()


def test_a_paid_holders_test_goes_through_their_provider_from_their_domain(
    startup: Client, sendgrid: FakeSendGrid
) -> None:
    browser, account = signed_in(ready_to_send(startup))
    template = welcome(account)

    text = page_text(preview(browser, template, action="send-test"))

    (call,) = sendgrid.sent
    assert call.json["from"]["email"] == "noreply@em.example.com"
    assert [to["email"] for to in call.json["personalizations"][0]["to"]] == [account.user.email]
    assert call.json["subject"] == "Welcome, Ada"
    assert f"Sent to {account.user.email} from noreply@em.example.com through SendGrid in" in text
    assert mail.outbox == []


def test_a_test_is_refused_in_the_sends_words_when_the_account_cannot_send(holder: Holder) -> None:
    browser, account = holder  # Startup, without a provider key or a sending domain

    response = preview(browser, welcome(account), action="send-test")

    assert response.status_code == 403
    assert "Paid plans must use a verified sending domain. Please add and verify your domain" in page_text(response)
    assert "<iframe sandbox" in page_html(response)  # the preview stands


def test_an_unconfirmed_holder_cannot_send_a_test(make_client: Any) -> None:
    browser, account = signed_in(make_client(email_confirmed_at=None))
    template = welcome(account)

    page = page_text(browser.get(path(template, "preview/")))
    response = preview(browser, template, action="send-test")

    assert "Send test email" not in page
    assert f"Confirm your email address first: follow the link we emailed to {account.user.email}" in page
    assert response.status_code == 403
    assert "Confirm your email address first: follow the link we emailed you, then send a test." in page_text(response)
    assert mail.outbox == []


def test_a_suppressed_own_address_gets_no_test(free_holder: Holder) -> None:
    browser, account = free_holder
    suppression_add(account=account, email=account.user.email)

    text = page_text(preview(browser, welcome(account), action="send-test"))

    assert f"Not sent to {account.user.email}: Recipient is on the suppression list (MANUAL)" in text
    assert mail.outbox == []


def test_the_eleventh_test_email_in_a_minute_is_refused(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)
    for _ in range(10):
        assert preview(browser, template, action="send-test").status_code == 200

    response = preview(browser, template, action="send-test")

    assert response.status_code == 429
    assert re.search(r"You have sent 10 test emails this minute\. Try again in \d+ seconds\.", page_text(response))
    assert len(mail.outbox) == 10
    assert preview(browser, template).status_code == 200  # a preview sends nothing, and is not counted


# --- delete ----------------------------------------------------------------------------------------------------------


def test_deleting_asks_first_then_deletes_the_template_and_its_versions(free_holder: Holder) -> None:
    browser, account = free_holder
    template = welcome(account)

    question = page_text(browser.get(path(template, "delete/")))
    response = browser.post(path(template, "delete/"))

    assert "Delete this template?" in question
    assert "welcome · Welcome email" in question
    assert response.status_code == 302
    assert response["Location"] == "/dashboard/templates/"
    assert not Template.objects.filter(pk=template.pk).exists()
    assert not TemplateVersion.objects.filter(template_id=template.pk).exists()
    entry = AuditEntry.objects.filter(account=account).first()
    assert entry is not None
    assert (entry.action, entry.actor, entry.target) == (AuditAction.TEMPLATE_DELETED, "holder", "welcome")
    assert "Template welcome is deleted: sends naming it are refused." in page_text(
        browser.get("/dashboard/templates/")
    )
    assert browser.get(path(template)).status_code == 404
