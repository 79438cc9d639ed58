"""Templates over the API: create, list, read, replace, delete, versions, render (docs/templates.md)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from accounts.models import AuditEntry, KeyMode, KeyScope
from accounts.services import api_key_create
from email_templates.models import Template, TemplateVersion
from tests.conftest import Client

pytestmark = pytest.mark.django_db

WELCOME: dict[str, Any] = {
    "alias": "welcome",
    "name": "Welcome",
    "subject": "Welcome, {{ user.name }}",
    "html": "<style>p { color: red } @media (max-width: 600px) { p { color: blue } }</style>"
    "<p>Hi {{ user.name }}</p>{% for row in rows %}<p>{{ row }}</p>{% endfor %}",
}


def create(client: Client, **overrides: Any) -> Any:
    return client.post("/api/v1/templates", {**WELCOME, **overrides})


def put(client: Client, template: str, body: dict[str, Any]) -> Any:
    return client.http.put(f"/api/v1/templates/{template}", body, format="json", HTTP_X_API_KEY=client.api_key)


def keyed(client: Client, *, scope: str = KeyScope.FULL, mode: str = KeyMode.LIVE) -> Client:
    key = api_key_create(account=client.account, name=f"{scope}-{mode}", scope=scope, mode=mode)
    return Client(account=client.account, api_key=key, http=client.http)


def test_creating_a_template_answers_201_with_version_1_its_variables_and_an_audit_entry(startup: Client) -> None:
    response = create(startup)

    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert data["alias"] == "welcome"
    assert data["version"] == 1
    assert data["variables"] == ["user", "rows"]
    assert data["text"] is None
    assert data["subject"] == WELCOME["subject"]
    stored = TemplateVersion.objects.get(template__account=startup.account)
    assert (stored.version, stored.variables) == (1, ["user", "rows"])
    entry = AuditEntry.objects.get(account=startup.account, action="template.created")
    assert entry.target == "welcome"


@pytest.mark.parametrize(
    ("part", "source", "message"),
    [
        ("html", "<p>one</p>\n{% if x %}\n<p>two</p>", "html has a syntax error on line 3: expected tag endif"),
        ("subject", "Hi {{ name | }}", "subject has a syntax error on line 1: expected word"),
        ("text", "a\nb\n{% include 'other' %}", "text has a syntax error on line 3: unexpected tag 'include'"),
        ("html", "{% render 'other' %}", "html has a syntax error on line 1: unexpected tag 'render'"),
        ("html", "{% if a %}" * 40 + "{% endif %}" * 40, "html has a syntax error on line 1: block nesting limit"),
    ],
)
def test_a_part_that_does_not_parse_is_a_400_naming_the_part_and_line(
    startup: Client, part: str, source: str, message: str
) -> None:
    response = create(startup, **{part: source})

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert response.json()["code"] == "template_syntax_error"
    assert not Template.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"alias": "Has Spaces"}, "alias must be 1 to 64 of a-z, 0-9, _ and -"),
        ({"alias": "a" * 65}, "alias must be 1 to 64 of a-z, 0-9, _ and -"),
        ({"subject": "two\nlines"}, "subject must be a single line"),
        ({"html": 5}, "html must be a string"),
        ({"bcc": ["x@example.com"]}, "Unknown field: bcc"),
    ],
)
def test_a_body_breaking_a_rule_is_a_400(startup: Client, body: dict[str, Any], message: str) -> None:
    response = create(startup, **body)

    assert response.status_code == 400
    assert response.json()["error"] == message


@pytest.mark.parametrize(
    "alias",
    [
        "0f8fad5b-d9cb-469f-a165-70867728950e",
        "0f8fad5bd9cb469fa16570867728950e",
        "-0f8fad5b-d9cb469f-a165-70867728950e--",
    ],
)
def test_an_alias_shaped_like_a_template_id_is_a_400(startup: Client, alias: str) -> None:
    response = create(startup, alias=alias)

    assert response.status_code == 400
    assert response.json()["error"] == "alias must not be shaped like a template id"
    assert response.json()["code"] == "validation_failed"
    assert not Template.objects.exists()


def test_an_alias_one_digit_short_of_an_id_is_an_alias(startup: Client) -> None:
    alias = "0f8fad5b-d9cb-469f-a165-70867728950"

    assert create(startup, alias=alias).status_code == 201
    assert startup.get(f"/api/v1/templates/{alias}").json()["data"]["alias"] == alias


def test_a_template_is_found_by_its_id_in_either_case_and_without_hyphens(startup: Client) -> None:
    template_id = create(startup).json()["data"]["id"]

    for spelling in (template_id, template_id.upper(), template_id.replace("-", "")):
        response = startup.get(f"/api/v1/templates/{spelling}")
        assert response.status_code == 200
        assert response.json()["data"]["id"] == template_id


def test_an_alias_taken_in_the_account_is_a_409_but_free_in_another(startup: Client, make_client: Any) -> None:
    create(startup)

    again = create(startup)

    assert again.status_code == 409
    assert again.json() | {"timestamp": None} == {
        "success": False,
        "error": "A template with alias welcome exists already",
        "code": "template_alias_taken",
        "timestamp": None,
    }
    assert create(make_client("startup")).status_code == 201


def test_an_account_has_at_most_100_templates(startup: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("email_templates.services.TEMPLATES_PER_ACCOUNT", 2)
    create(startup, alias="one")
    create(startup, alias="two")

    response = create(startup, alias="three")

    assert response.status_code == 409
    assert response.json()["error"] == "An account may have at most 100 templates. Delete one first."
    assert response.json()["code"] == "template_limit"


def test_replacing_adds_a_version_and_older_ones_stay_readable(startup: Client) -> None:
    template_id = create(startup).json()["data"]["id"]

    response = put(startup, "welcome", {"subject": "Hello {{ first }}", "html": "<p>{{ first }}</p>", "text": "Hi"})

    assert response.status_code == 200, response.json()
    assert response.json()["data"]["version"] == 2
    assert response.json()["data"]["variables"] == ["first"]
    current = startup.get(f"/api/v1/templates/{template_id}").json()["data"]
    assert (current["version"], current["subject"], current["text"]) == (2, "Hello {{ first }}", "Hi")
    first = startup.get("/api/v1/templates/welcome", version="1").json()["data"]
    assert (first["version"], first["subject"]) == (1, WELCOME["subject"])
    missing = startup.get("/api/v1/templates/welcome", version="3")
    assert missing.status_code == 404
    assert missing.json()["error"] == "Template welcome has no version 3"
    versions = startup.get("/api/v1/templates/welcome/versions").json()["data"]
    assert [entry["version"] for entry in versions["data"]] == [2, 1]
    assert versions["pagination"]["total"] == 2
    assert AuditEntry.objects.filter(account=startup.account, action="template.updated", target="welcome").exists()


def test_the_list_is_paged_by_alias_without_bodies(startup: Client) -> None:
    create(startup, alias="b-second")
    create(startup, alias="a-first")

    page = startup.get("/api/v1/templates").json()["data"]

    assert [entry["alias"] for entry in page["data"]] == ["a-first", "b-second"]
    assert set(page["data"][0]) == {"id", "alias", "name", "version", "createdAt", "updatedAt"}
    assert page["pagination"] == {"page": 1, "limit": 20, "total": 2, "totalPages": 1}


def test_deleting_frees_the_alias_and_the_template_is_not_found_after(startup: Client) -> None:
    create(startup)

    response = startup.delete("/api/v1/templates/welcome")

    assert response.status_code == 200
    assert response.json()["data"]["message"] == "Template deleted"
    assert not TemplateVersion.objects.exists()
    gone = startup.get("/api/v1/templates/welcome")
    assert gone.status_code == 404
    assert gone.json()["error"] == "Template welcome not found"
    assert gone.json()["code"] == "template_not_found"
    assert AuditEntry.objects.filter(account=startup.account, action="template.deleted", target="welcome").exists()
    assert create(startup).status_code == 201


def test_another_accounts_template_is_not_found(startup: Client, make_client: Any) -> None:
    template_id = create(make_client("startup")).json()["data"]["id"]

    for path in (f"/api/v1/templates/{template_id}", "/api/v1/templates/welcome"):
        assert startup.get(path).status_code == 404
    assert startup.delete(f"/api/v1/templates/{template_id}").status_code == 404
    assert startup.get(f"/api/v1/templates/{uuid.uuid4()}").status_code == 404


def test_render_answers_the_parts_with_styles_inlined_escaped_html_and_a_made_text(startup: Client) -> None:
    create(startup)

    response = startup.post(
        "/api/v1/templates/welcome/render", {"data": {"user": {"name": "Ada & <Bob>"}, "rows": [1]}}
    )

    assert response.status_code == 200, response.json()
    rendered = response.json()["data"]
    assert rendered["subject"] == "Welcome, Ada & <Bob>"
    assert '<p style="color: red;">Hi Ada &amp; &lt;Bob&gt;</p>' in rendered["html"]
    assert "@media (max-width: 600px)" in rendered["html"]
    assert rendered["text"] == "Hi Ada & <Bob>\n\n1"


def test_render_uses_the_templates_own_text_unescaped(startup: Client) -> None:
    create(startup, text="Hi {{ user.name }}")

    rendered = startup.post("/api/v1/templates/welcome/render", {"data": {"user": {"name": "<Ada>"}, "rows": []}})

    assert rendered.json()["data"]["text"] == "Hi <Ada>"


@pytest.mark.parametrize(
    ("html", "data", "message", "code"),
    [
        ("<p>{{ user.name }}</p>", {}, "data is missing user for template bad", "template_data_missing"),
        ("<p>{{ who | default: 'you' }}{% if flag %}x{% endif %}</p>", {}, None, None),
        (
            "{% for a in (1..1000) %}{% for b in (1..1000) %}{{ b }}{% endfor %}{% endfor %}",
            {},
            "Template bad could not be rendered: html: loop iteration limit reached",
            "template_render_failed",
        ),
        (
            "{% for a in (1..1000) %}{% endfor %}" * 11 + "x",
            {},
            "Template bad could not be rendered: html: loop iteration limit reached",
            "template_render_failed",
        ),
        (
            "{% for a in (1..1000) %}{{ big }}{% endfor %}",
            {"big": "x" * 60000},
            "Template bad could not be rendered: html: output stream limit reached",
            "template_render_failed",
        ),
        (
            "{% assign s = big %}{% for a in (1..20) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}x",
            {"big": "x" * 1000},
            "Template bad could not be rendered: html: ",
            "template_render_failed",
        ),
        (
            "{{ n | divided_by: 0 }}",
            {"n": 3},
            "Template bad could not be rendered: html: divided_by: can't divide by 0",
            "template_render_failed",
        ),
        (
            "{{ n | map: 'x' }}",
            {"n": 5},
            "Template bad could not be rendered: html: can't map sequence",
            "template_render_failed",
        ),
    ],
)
def test_render_refuses_what_cannot_be_rendered_with_a_400(
    startup: Client, html: str, data: dict[str, Any], message: str | None, code: str | None
) -> None:
    create(startup, alias="bad", subject="Hi", html=html)

    response = startup.post("/api/v1/templates/bad/render", {"data": data})

    if message is None:
        assert response.status_code == 200, response.json()
        assert response.json()["data"]["html"] == "<p>you</p>"
        return
    assert response.status_code == 400, response.json()
    assert response.json()["error"].startswith(message)
    assert response.json()["code"] == code


def test_render_refuses_data_over_64_kb(startup: Client) -> None:
    create(startup)

    response = startup.post("/api/v1/templates/welcome/render", {"data": {"big": "x" * 70000}})

    assert response.status_code == 400
    assert response.json()["error"] == "data must be at most 64 KB"


def test_a_read_key_lists_reads_and_renders_but_does_not_change(startup: Client) -> None:
    create(startup)
    reader = keyed(startup, scope=KeyScope.READ)

    assert reader.get("/api/v1/templates").status_code == 200
    assert reader.get("/api/v1/templates/welcome/versions").status_code == 200
    assert (
        reader.post("/api/v1/templates/welcome/render", {"data": {"user": {"name": "A"}, "rows": []}}).status_code
        == 200
    )
    assert create(reader, alias="other").status_code == 403
    assert reader.delete("/api/v1/templates/welcome").status_code == 403


def test_a_send_key_calls_none_of_the_template_endpoints(startup: Client) -> None:
    create(startup)
    sender = keyed(startup, scope=KeyScope.SEND)

    assert sender.get("/api/v1/templates").status_code == 403
    assert sender.post("/api/v1/templates/welcome/render", {"data": {}}).status_code == 403


def test_a_test_key_reads_and_renders_but_may_not_create_replace_or_delete(startup: Client) -> None:
    create(startup)
    tester = keyed(startup, mode=KeyMode.TEST)

    assert tester.get("/api/v1/templates/welcome").status_code == 200
    assert (
        tester.post("/api/v1/templates/welcome/render", {"data": {"user": {"name": "A"}, "rows": []}}).status_code
        == 200
    )
    for response in (
        create(tester, alias="other"),
        put(tester, "welcome", {"subject": "x", "html": "y"}),
        tester.delete("/api/v1/templates/welcome"),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "test_key_refused"
    assert TemplateVersion.objects.count() == 1
