"""Reading an account's templates and rendering them (docs/templates.md)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Max, Q, QuerySet

from accounts.models import Account
from core.api.fields import TEMPLATE_ID
from core.errors import SendTemplateNotFound, SendTemplateVersionNotFound, TemplateNotFound, TemplateVersionNotFound
from core.paging import page_rows
from email_templates import engine
from email_templates.models import Template, TemplateVersion
from providers.text import text_part


def template_get(*, account: Account, template: str) -> Template:
    """The account's template of this id or alias; another account's, a deleted one or none is TemplateNotFound."""
    found = _templates_named(account, template).first()
    if found is None:
        raise TemplateNotFound(template=template)
    return found


def template_list(*, account: Account, page: int, limit: int) -> tuple[list[Template], int]:
    """One page of the account's templates by alias, each with ``current_version``, and their total."""
    templates = Template.objects.filter(account=account).annotate(current_version=Max("versions__version"))
    return page_rows(templates.order_by("alias"), page=page, limit=limit, counted=account.email_templates.all())


def template_version_get(*, template: Template, version: int | None = None) -> TemplateVersion:
    """The template's version ``version``, or its newest; one it does not have is TemplateVersionNotFound."""
    versions = template.versions.all()
    found = versions.first() if version is None else versions.filter(version=version).first()
    if found is None:
        raise TemplateVersionNotFound(alias=template.alias, version=version or 0)
    found.template = template
    return found


def template_version_list(*, template: Template, page: int, limit: int) -> tuple[list[TemplateVersion], int]:
    """One page of the template's versions, newest first, without their parts, and their total."""
    versions = template.versions.defer("subject", "html", "text").order_by("-version")
    return page_rows(versions, page=page, limit=limit)


@dataclass(frozen=True)
class RenderedForSend:
    """What a send with a template puts in its job (docs/templates.md, "Sending with a template")."""

    version: int
    rendered: engine.Rendered


def template_rendered_for_send(
    *, account: Account, template: str, version: int | None, data: Mapping[str, Any]
) -> RenderedForSend:
    """The account's template ``template`` (id or alias) at ``version`` (or its newest) rendered with ``data``, in one
    query; raises the send's 400s: SendTemplateNotFound, SendTemplateVersionNotFound, TemplateDataMissing,
    TemplateNotRendered."""
    versions = TemplateVersion.objects.filter(template__in=_templates_named(account, template)).select_related(
        "template"
    )
    found = versions.order_by("-version").first() if version is None else versions.filter(version=version).first()
    if found is None:
        named = None if version is None else _templates_named(account, template).first()
        if named is not None and version is not None:
            raise SendTemplateVersionNotFound(alias=named.alias, version=version)
        raise SendTemplateNotFound(template=template)
    return RenderedForSend(version=found.version, rendered=_rendered(found, data))


def template_preview(*, version: TemplateVersion, data: Mapping[str, Any]) -> engine.Rendered:
    """The version rendered with ``data`` as a send would send it, its text part made from the HTML when it has no
    `text` of its own, as a send's is (docs/rules.md, "Rich email")."""
    rendered = _rendered(version, data)
    if rendered.text is not None:
        return rendered
    return engine.Rendered(subject=rendered.subject, html=rendered.html, text=text_part(rendered.html))


def _rendered(version: TemplateVersion, data: Mapping[str, Any]) -> engine.Rendered:
    parts = engine.Parts(subject=version.subject, html=version.html, text=version.text)
    return engine.render(engine.compiled(parts), data, alias=version.template.alias)


def _templates_named(account: Account, template: str) -> QuerySet[Template]:
    """The account's template whose id or alias is ``template``, as a query."""
    named = Q(alias=template)
    if TEMPLATE_ID.fullmatch(template):  # never an alias's shape, which the alias's field refuses
        named |= Q(id=uuid.UUID(template))
    return Template.objects.filter(named, account=account)
