"""Saving and deleting an account's templates; every save is a new version (docs/templates.md)."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import Account, AuditAction
from accounts.services import audit_record
from core.errors import TemplateAliasTaken, TemplateLimit
from email_templates import engine
from email_templates.models import TEMPLATES_PER_ACCOUNT, Template, TemplateVersion


def template_create(
    *, account: Account, alias: str, name: str, subject: str, html: str, text: str | None = None
) -> TemplateVersion:
    """A new template and its version 1; raises TemplateSyntaxInvalid, TemplateLimit or TemplateAliasTaken."""
    variables = _variables_of(subject, html, text)
    template = Template(account=account, alias=alias, name=name)
    with transaction.atomic():
        _templates_changing(account.pk)
        if Template.objects.filter(account=account).count() >= TEMPLATES_PER_ACCOUNT:
            raise TemplateLimit()
        if Template.objects.filter(account=account, alias=alias).exists():
            raise TemplateAliasTaken(alias=alias)
        template.save(force_insert=True)
        version = _version_add(template, number=1, subject=subject, html=html, text=text, variables=variables)
        audit_record(account=account, action=AuditAction.TEMPLATE_CREATED, target=alias)
    return version


def template_update(
    *, template: Template, subject: str, html: str, text: str | None = None, name: str | None = None
) -> TemplateVersion:
    """The template's next version, which becomes its current one (and its new name, if given); raises
    TemplateSyntaxInvalid."""
    variables = _variables_of(subject, html, text)
    with transaction.atomic():
        # Two saves at once take turns (on the account's row), and number their versions one after the other.
        _templates_changing(template.account_id)
        newest = template.versions.aggregate(newest=Max("version"))["newest"] or 0
        template.name = name if name is not None else template.name
        template.updated_at = timezone.now()
        template.save(update_fields=["name", "updated_at"])
        version = _version_add(template, number=newest + 1, subject=subject, html=html, text=text, variables=variables)
        audit_record(account=template.account, action=AuditAction.TEMPLATE_UPDATED, target=template.alias)
    return version


def template_delete(template: Template) -> None:
    """Deletes the template with its versions: its alias is free again, and a send naming it is refused. Jobs
    rendered from it keep what they rendered."""
    with transaction.atomic():
        _templates_changing(template.account_id)
        template.delete()
        audit_record(account=template.account, action=AuditAction.TEMPLATE_DELETED, target=template.alias)


def _variables_of(subject: str, html: str, text: str | None) -> list[str]:
    """The names the parts read; a part that does not parse is TemplateSyntaxInvalid."""
    return engine.variables_read(engine.compiled(engine.Parts(subject=subject, html=html, text=text)))


def _version_add(
    template: Template, *, number: int, subject: str, html: str, text: str | None, variables: list[str]
) -> TemplateVersion:
    return TemplateVersion.objects.create(
        template=template,
        version=number,
        subject=subject,
        html=html,
        text=text,
        variables=variables,
        created_at=template.updated_at,
    )


def _templates_changing(account_id: int) -> None:
    """Gives the account's templates a new stamp, which commits with the change or not at all: every process's cache
    of resolved templates drops what it kept of them at its next request (email_templates.selectors). The update
    also locks the account's row until the transaction ends: the account's template changes take turns, so two
    creates cannot both take the last place or the same alias, and each change locks the account before any
    template."""
    Account.objects.filter(pk=account_id).update(templates_stamp=uuid.uuid4())
