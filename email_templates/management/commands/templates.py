"""``manage.py templates``: an account's email templates at the shell (docs/operations.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from core.api.envelope import iso_utc
from core.errors import TemplateNotFound, TemplateVersionNotFound
from email_templates.models import TEMPLATES_PER_ACCOUNT, Template, TemplateVersion
from email_templates.selectors import template_get, template_list, template_version_get


class Command(BaseCommand):
    help = (
        "List an account's templates by alias (alias, name, current version, updated at; tab-separated), or show "
        "one template's parts and variables, at its current version or the one given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["list", "show"])
        parser.add_argument("alias", nargs="?", help="with 'show': the template's alias or id")
        parser.add_argument("version", nargs="?", type=int, help="with 'show': a version other than the current")

    def handle(
        self, *args: Any, email: str, action: str, alias: str | None, version: int | None, **options: Any
    ) -> None:
        account = account_or_error(email)
        if action == "list":
            if alias is not None:
                raise CommandError("'list' takes no alias")
            templates, total = template_list(account=account, page=1, limit=TEMPLATES_PER_ACCOUNT)
            self.stdout.write("\n".join(map(listing_line, templates)))
            self.stdout.write(f"{total:,} template(s) for {email}.")
            return
        if not alias:
            raise CommandError("'show' needs the template's alias")
        try:
            template = template_get(account=account, template=alias)
            self.stdout.write(shown(template_version_get(template=template, version=version)))
        except (TemplateNotFound, TemplateVersionNotFound) as error:
            raise CommandError(error.message) from None


def listing_line(template: Template) -> str:
    # current_version: annotated by template_list, which django-stubs does not carry through the list.
    current = template.current_version  # type: ignore[attr-defined]
    return "\t".join([template.alias, template.name, str(current), iso_utc(template.updated_at)])


def shown(version: TemplateVersion) -> str:
    template = version.template
    return "\n".join(
        [
            f"{template.alias} ({template.name}), version {version.version} of {iso_utc(version.created_at)}",
            f"variables: {', '.join(version.variables) or '-'}",
            f"subject: {version.subject}",
            "html:",
            version.html,
            "text:" if version.text is not None else "text: - (made from the HTML when sent)",
            *([version.text] if version.text is not None else []),
        ]
    )
