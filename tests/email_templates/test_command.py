"""``manage.py templates EMAIL list|show ALIAS``: an account's templates at the shell."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from email_templates.selectors import template_get
from email_templates.services import template_create, template_update
from tests.conftest import Client

pytestmark = pytest.mark.django_db


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command("templates", *args, stdout=out)
    return out.getvalue().splitlines()


def test_list_prints_each_template_by_alias_with_its_current_version(startup: Client) -> None:
    template_create(account=startup.account, alias="welcome", name="Welcome", subject="Hi", html="<p>Hi</p>")
    template_create(account=startup.account, alias="reset", name="Reset", subject="Reset", html="<p>{{ link }}</p>")
    template_update(template=template_get(account=startup.account, template="reset"), subject="R", html="<p>r</p>")

    lines = run(startup.account.user.email, "list")

    assert [line.split("\t")[:3] for line in lines[:-1]] == [["reset", "Reset", "2"], ["welcome", "Welcome", "1"]]
    assert lines[-1] == f"2 template(s) for {startup.account.user.email}."


def test_show_prints_a_versions_parts_and_variables(startup: Client) -> None:
    template_create(
        account=startup.account, alias="reset", name="Reset", subject="Hi {{ name }}", html="<p>{{ link }}</p>"
    )
    template_update(
        template=template_get(account=startup.account, template="reset"), subject="New", html="<p>x</p>", text="x"
    )

    first = run(startup.account.user.email, "show", "reset", "1")
    current = run(startup.account.user.email, "show", "reset")

    assert first[0].startswith("reset (Reset), version 1 of ")
    assert first[1:] == [
        "variables: name, link",
        "subject: Hi {{ name }}",
        "html:",
        "<p>{{ link }}</p>",
        "text: - (made from the HTML when sent)",
    ]
    assert current[1:] == ["variables: -", "subject: New", "html:", "<p>x</p>", "text:", "x"]


def test_an_unknown_template_or_version_is_refused_in_the_apis_words(startup: Client) -> None:
    template_create(account=startup.account, alias="reset", name="Reset", subject="Hi", html="<p>x</p>")

    with pytest.raises(CommandError, match=r"^Template other not found$"):
        run(startup.account.user.email, "show", "other")
    with pytest.raises(CommandError, match=r"^Template reset has no version 3$"):
        run(startup.account.user.email, "show", "reset", "3")
    with pytest.raises(CommandError, match="needs the template's alias"):
        run(startup.account.user.email, "show")
