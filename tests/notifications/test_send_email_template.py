"""Sending with a template (docs/templates.md, "Sending with a template"): rendered when accepted, the job keeps the
rendered parts and what named them, and every attempt and failover sends those bytes, whatever the template
becomes; each refusal is a 400 in the send's order of checks, within the request's time."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account, KeyMode
from accounts.services import api_key_create
from core import sql
from email_templates.models import Template, TemplateVersion
from email_templates.selectors import template_get
from email_templates.services import template_create, template_update
from notifications.delivery.email import deliver_email
from notifications.models import Job
from suppressions.unsubscribe import unsubscribe_url
from tests.clients import APIClient
from tests.conftest import Client, ready_to_send
from tests.fakes.providers import FakePostmark, FakeResend, FakeSendGrid

pytestmark = pytest.mark.django_db

RESET = {
    "subject": "Reset your password, {{ user.name }}",
    "html": "<style>a { color: red } @media (max-width: 600px) { a { color: blue } }</style>"
    '<p>Hi {{ user.name }}</p><a href="{{ link }}">Reset</a>',
    "text": "Hi {{ user.name }}, reset at {{ link }}",
}
DATA = {"user": {"name": "Ada & Bob"}, "link": "https://example.com/r/1"}


def saved(client: Client, alias: str = "reset", **parts: Any) -> str:
    version = template_create(account=client.account, alias=alias, name="Reset", **{**RESET, **parts})
    return str(version.template_id)


def send(client: Client, **fields: Any) -> Any:
    return client.post("/api/v1/notifications/email", {"to": "user@example.com", **fields})


def accepted_job(response: Any) -> Job:
    assert response.status_code == 202, response.json()
    return Job.objects.get(id=response.json()["data"]["jobId"])


def refused(response: Any, message: str, code: str = "validation_failed") -> None:
    assert response.status_code == 400, response.json()
    assert (response.json()["error"], response.json()["code"]) == (message, code)
    assert not Job.objects.exists()


def test_a_templated_send_keeps_the_rendered_parts_and_what_named_them(free: Client) -> None:
    saved(free)

    job = accepted_job(send(free, template="reset", data=DATA, tags=["reset"], cc=["copy@example.com"]))

    payload = job.payload
    assert payload["subject"] == "Reset your password, Ada & Bob"
    assert '<p style="color: red;">' not in payload["body"]
    assert '<a href="https://example.com/r/1" style="color: red;">Reset</a>' in payload["body"]
    assert "<p>Hi Ada &amp; Bob</p>" in payload["body"]
    assert "@media (max-width: 600px)" in payload["body"]
    assert payload["text"] == "Hi Ada & Bob, reset at https://example.com/r/1"
    assert (payload["template"], payload["templateVersion"], payload["data"]) == ("reset", 1, DATA)
    assert (payload["tags"], payload["cc"]) == (["reset"], ["copy@example.com"])


def test_the_template_is_named_by_id_and_a_version_pinned(free: Client) -> None:
    template_id = saved(free)
    template_update(template=template_get(account=free.account, template="reset"), subject="New", html="<p>new</p>")

    pinned = accepted_job(send(free, template=template_id, templateVersion=1, data=DATA)).payload
    current = accepted_job(send(free, template="reset", data=DATA)).payload

    assert (pinned["templateVersion"], pinned["subject"]) == (1, "Reset your password, Ada & Bob")
    assert (current["templateVersion"], current["subject"], current["body"]) == (2, "New", "<p>new</p>")
    assert "text" not in current  # made from the HTML when sent, as a plain send's (docs/rules.md, "Rich email")


def test_every_attempt_and_failover_sends_what_was_rendered_even_after_the_template_changed(
    startup: Client, sendgrid: FakeSendGrid, resend: FakeResend
) -> None:
    ready_to_send(startup, "SENDGRID", "RESEND")
    saved(startup)
    job = accepted_job(send(startup, **{"from": "hello@example.com"}, template="reset", data=DATA))
    template_update(
        template=template_get(account=startup.account, template="reset"), subject="Changed", html="<p>x</p>"
    )
    sendgrid.fail(500)

    assert deliver_email(job, attempt=1).delivered

    (tried,) = [call.json for call in sendgrid.calls if call.path.endswith("/mail/send")]
    delivered = resend.sent[0].json
    assert tried["subject"] == delivered["subject"] == "Reset your password, Ada & Bob"
    assert [part["value"] for part in tried["content"]] == [delivered["text"], delivered["html"]]
    assert delivered["html"] == job.payload["body"]
    assert delivered["text"] == "Hi Ada & Bob, reset at https://example.com/r/1"


def test_postmark_receives_the_rendered_html_and_a_text_made_from_it(startup: Client, postmark: FakePostmark) -> None:
    ready_to_send(startup, "POSTMARK")
    saved(startup, text=None)
    job = accepted_job(send(startup, **{"from": "hello@example.com"}, template="reset", data=DATA))

    assert deliver_email(job, attempt=1).delivered

    sent = postmark.sent[0].json
    assert sent["Subject"] == "Reset your password, Ada & Bob"
    assert "Hi Ada &amp; Bob" in sent["HtmlBody"]
    assert sent["TextBody"].startswith("Hi Ada & Bob")


def test_a_test_key_renders_and_sends_nothing(free: Client) -> None:
    saved(free)
    tester = Client(
        account=free.account,
        api_key=api_key_create(account=free.account, name="Laptop", mode=KeyMode.TEST),
        http=APIClient(),
    )

    job = accepted_job(send(tester, template="reset", data=DATA))

    assert job.test
    assert job.payload["subject"] == "Reset your password, Ada & Bob"
    refused_job = send(tester, template="reset", data={})
    assert refused_job.status_code == 400


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"template": "reset", "subject": "Hi", "data": DATA}, "template cannot be combined with subject or body"),
        ({"template": "reset", "body": "<p>Hi</p>", "data": DATA}, "template cannot be combined with subject or body"),
        ({"body": "<p>Hi</p>"}, "subject is required"),
        ({"subject": "Hi", "body": "<p>Hi</p>", "data": DATA}, "`data` requires `template` to be set"),
        (
            {"subject": "Hi", "body": "<p>Hi</p>", "templateVersion": 1},
            "`templateVersion` requires `template` to be set",
        ),
        ({"template": "reset", "data": [1]}, "data must be an object"),
        ({"template": "reset", "data": {"big": "x" * 70000}}, "data must be at most 64 KB"),
        ({"template": "reset", "templateVersion": 0, "data": DATA}, "templateVersion must be a positive integer"),
        ({"template": "reset", "templateVersion": True, "data": DATA}, "templateVersion must be a positive integer"),
        ({"template": "", "data": DATA}, "template must not be empty"),
    ],
)
def test_a_body_that_mixes_or_misses_the_message_is_a_400(free: Client, fields: dict[str, Any], message: str) -> None:
    saved(free)

    refused(send(free, **fields), message)


def test_a_template_deleted_unknown_or_another_accounts_is_not_found(free: Client, make_client: Any) -> None:
    other_id = saved(make_client())
    saved(free, alias="gone")
    free.delete("/api/v1/templates/gone")

    for name in ("gone", "nothing", other_id):
        refused(send(free, template=name, data=DATA), f"Template {name} not found", "send_template_not_found")


def test_a_version_the_template_does_not_have_is_a_400(free: Client) -> None:
    saved(free)

    refused(
        send(free, template="reset", templateVersion=2, data=DATA),
        "Template reset has no version 2",
        "send_template_version_not_found",
    )


def test_missing_data_is_a_400_naming_the_variable(free: Client) -> None:
    saved(free)

    refused(
        send(free, template="reset", data={"user": {"name": "Ada"}}),
        "data is missing link for template reset",
        "template_data_missing",
    )


def test_a_plan_rule_is_answered_before_the_template_is_rendered(free: Client) -> None:
    saved(free)

    response = send(free, template="reset", data={}, priority=10)

    assert response.status_code == 403
    assert response.json()["code"] == "priority_requires_paid_plan"


@pytest.mark.parametrize(
    ("html", "data", "reason"),
    [
        (
            "{% for a in (1..1000) %}{% for b in (1..1000) %}{{ b }}{% endfor %}{% endfor %}",
            {},
            "html: loop iteration limit reached",
        ),
        (
            "{% for a in rows %}{% for b in rows %}{% for c in rows %}x{% endfor %}{% endfor %}{% endfor %}",
            {"rows": list(range(5000))},
            "html: loop iteration limit reached",
        ),
        (
            "{% for a in (1..1000) %}{{ big }}{{ big }}{{ big }}{% endfor %}",
            {"big": "x" * 60000},
            "html: output stream limit reached",
        ),
        (
            "{% assign s = big %}{% for a in (1..30) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}x",
            {"big": "x" * 1000},
            "html: ",
        ),
        ("{% if a %}" * 31 + "x" + "{% endif %}" * 31, {}, None),
        ("{{ n | divided_by: 0 }}", {"n": 1}, "html: divided_by: can't divide by 0"),
        ("{{ n | map: 'x' }}", {"n": 1}, "html: can't map sequence"),
        ("<p>x</p>", {}, "subject must be a single line"),
        (
            "<style>p { font-family: " + "a" * 500 + " }</style>{% for a in (1..2100) %}<p>x</p>{% endfor %}",
            {},
            "html is longer than 1048576 characters once its styles are inlined",
        ),
        (
            # The rule is short: the parser copies the <b> and <i> left open into every paragraph after
            # (tests/email_templates/test_inlined_limit.py).
            '<style>p { color: red }</style><p><b class="{{ b }}"><i class="{{ b }}">x</p>'
            "{% for a in (1..5000) %}<p>y</p>{% endfor %}",
            {"b": "z" * 100},
            "html is longer than 1048576 characters once its styles are inlined",
        ),
    ],
)
def test_a_template_bomb_is_a_400_within_the_requests_time(
    free: Client, html: str, data: dict[str, Any], reason: str | None
) -> None:
    subject = "{{ nl }}" if reason == "subject must be a single line" else "Hi"
    if reason is None:  # refused when saved: too deeply nested
        response = free.post("/api/v1/templates", {"alias": "bomb", "name": "Bomb", "subject": subject, "html": html})
        assert response.json()["code"] == "template_syntax_error"
        return
    template_create(account=free.account, alias="bomb", name="Bomb", subject=subject, html=html)
    started = time.monotonic()

    response = send(free, template="bomb", data={**data, "nl": "a\nb"})

    assert time.monotonic() - started < 2
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "template_render_failed"
    assert response.json()["error"].startswith(f"Template bomb could not be rendered: {reason}")
    assert not Job.objects.exists()


def test_batch_items_each_take_their_own_template_and_data(free: Client) -> None:
    saved(free)
    items = [
        {"to": "a@example.com", "template": "reset", "data": DATA},
        {"to": "b@example.com", "template": "reset", "data": {}},
        {"to": "c@example.com", "subject": "Plain", "body": "<p>plain</p>"},
    ]

    response = free.post("/api/v1/notifications/email/batch", {"items": items})

    assert response.status_code == 202, response.json()
    answers = response.json()["data"]["items"]
    assert "jobId" in answers[0]
    assert "jobId" in answers[2]
    assert answers[1] == {
        "status": 400,
        "error": "data is missing user for template reset",
        "code": "template_data_missing",
    }
    subjects = sorted(Job.objects.values_list("payload", flat=True), key=lambda payload: payload["to"])
    assert [payload["subject"] for payload in subjects] == ["Reset your password, Ada & Bob", "Plain"]


def test_a_send_with_a_topic_gives_its_template_the_recipients_unsubscribe_url(free: Client) -> None:
    saved(free, alias="digest", html='<p>{{ link }}</p><a href="{{ unsubscribe_url }}">Unsubscribe</a>')

    job = accepted_job(send(free, template="digest", data=DATA, topic="weekly-digest"))

    url = unsubscribe_url(account_id=free.account.pk, email="user@example.com", topic="weekly-digest")
    assert f'<a href="{url}">Unsubscribe</a>' in job.payload["body"]
    assert job.payload["data"] == DATA


def test_a_template_outputting_the_unsubscribe_url_needs_a_topic(free: Client) -> None:
    saved(free, alias="digest", html='<a href="{{ unsubscribe_url }}">Unsubscribe</a>')
    saved(
        free, alias="guarded", html='<p>Hi</p>{% if unsubscribe_url %}<a href="{{ unsubscribe_url }}">x</a>{% endif %}'
    )

    refused(
        send(free, template="digest", data=DATA),
        "data is missing unsubscribe_url for template digest",
        "template_data_missing",
    )
    assert "Unsubscribe" not in accepted_job(send(free, template="guarded", data=DATA)).payload["body"]


def template_queries(client: Client, **fields: Any) -> list[str]:
    """The statements a send made that read a template's tables, the send accepted."""
    with CaptureQueriesContext(connection) as queries:
        accepted_job(send(client, **fields))
    return [query["sql"] for query in queries if sql.table(Template) in query["sql"]]


def test_a_template_sent_again_unchanged_is_not_read_again(make_client: Any) -> None:
    free = make_client(rate_limit=100)
    template_id = saved(free)

    assert template_queries(free, template="reset", data=DATA)
    assert template_queries(free, template=template_id, templateVersion=1, data=DATA)

    assert template_queries(free, template="reset", data=DATA) == []
    assert template_queries(free, template=template_id, templateVersion=1, data=DATA) == []


def test_a_change_through_the_api_is_sent_by_the_very_next_send(make_client: Any) -> None:
    free = make_client(rate_limit=100)
    saved(free)
    assert accepted_job(send(free, template="reset", data=DATA)).payload["templateVersion"] == 1

    replaced = free.http.put(
        "/api/v1/templates/reset", {"subject": "New", "html": "<p>new</p>"}, format="json", HTTP_X_API_KEY=free.api_key
    )
    assert replaced.status_code == 200, replaced.json()
    current = accepted_job(send(free, template="reset", data=DATA)).payload
    assert (current["templateVersion"], current["subject"], current["body"]) == (2, "New", "<p>new</p>")
    pinned = accepted_job(send(free, template="reset", templateVersion=1, data=DATA)).payload
    assert pinned["subject"] == "Reset your password, Ada & Bob"

    assert free.delete("/api/v1/templates/reset").status_code == 200
    for pinning in ({}, {"templateVersion": 1}):
        gone = send(free, template="reset", data=DATA, **pinning)
        assert (gone.status_code, gone.json()["code"]) == (400, "send_template_not_found")

    saved(free, subject="Again", html="<p>again</p>", text=None)
    again = accepted_job(send(free, template="reset", data=DATA)).payload
    assert (again["templateVersion"], again["subject"]) == (1, "Again")


def test_a_change_another_process_made_is_sent_by_the_next_send(free: Client) -> None:
    saved(free)
    accepted_job(send(free, template="reset", data=DATA))
    template = Template.objects.get(account=free.account, alias="reset")

    # What another web process's replace commits: the version, and the account's new stamp in its transaction.
    TemplateVersion.objects.create(template=template, version=2, subject="Elsewhere", html="<p>x</p>", variables=[])
    Account.objects.filter(pk=free.account.pk).update(templates_stamp=uuid.uuid4())

    current = accepted_job(send(free, template="reset", data=DATA)).payload
    assert (current["templateVersion"], current["subject"]) == (2, "Elsewhere")
