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
from core.lru import BoundedLRU
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


@dataclass(frozen=True)
class ResolvedTemplate:
    """What a send's `template` and `templateVersion` named, as its account's templates stood at ``stamp``."""

    stamp: uuid.UUID | None
    version: int
    alias: str
    compiled: engine.Compiled


# A send's template is resolved and parsed once a process while its account's templates stay as they are: an entry
# holds while the account's templates_stamp, read with the API key, is the one it was resolved at (every create,
# update and delete gives a new stamp in its transaction), so a change made by any process is seen by the next
# request. Keyed by (account id, `template` as sent, `templateVersion` or None); weighed by the bytes its parse holds
# (engine.parsed_bytes), so the cache's memory is bounded whatever the templates are made of (docs/templates.md,
# "Operators").
# Off the framework's road: docs/departures.md, "resolved-template-cache".
RESOLVED_TEMPLATES: BoundedLRU[tuple[int, str, int | None], ResolvedTemplate] = BoundedLRU(
    max_entries=4096, max_weight=64 * 1024 * 1024
)


def template_rendered_for_send(
    *, account: Account, template: str, version: int | None, data: Mapping[str, Any]
) -> RenderedForSend:
    """The account's template ``template`` (id or alias) at ``version`` (or its newest) rendered with ``data``, with
    no query when this process resolved it since the account's templates last changed, else one; raises the send's
    400s: SendTemplateNotFound, SendTemplateVersionNotFound, TemplateDataMissing, TemplateNotRendered."""
    key = (account.pk, template, version)
    resolved = RESOLVED_TEMPLATES.get(key)
    if resolved is None or resolved.stamp != account.templates_stamp:
        resolved, weight = _resolved_for_send(account, template, version)
        RESOLVED_TEMPLATES.put(key, resolved, weight=weight)
    rendered = engine.render(resolved.compiled, data, alias=resolved.alias)
    return RenderedForSend(version=resolved.version, rendered=rendered)


def _resolved_for_send(account: Account, template: str, version: int | None) -> tuple[ResolvedTemplate, int]:
    """The version a send names, parsed, and its weight in RESOLVED_TEMPLATES, in one query."""
    versions = TemplateVersion.objects.filter(template__in=_templates_named(account, template)).select_related(
        "template"
    )
    found = versions.order_by("-version").first() if version is None else versions.filter(version=version).first()
    if found is None:
        named = None if version is None else _templates_named(account, template).first()
        if named is not None and version is not None:
            raise SendTemplateVersionNotFound(alias=named.alias, version=version)
        raise SendTemplateNotFound(template=template)
    parts = _parts(found)
    resolved = ResolvedTemplate(
        stamp=account.templates_stamp,
        version=found.version,
        alias=found.template.alias,
        compiled=engine.compiled(parts),
    )
    return resolved, engine.parsed_bytes(resolved.compiled)


def template_preview(*, version: TemplateVersion, data: Mapping[str, Any]) -> engine.Rendered:
    """The version rendered with ``data`` as a send would send it, its text part made from the HTML when it has no
    `text` of its own, as a send's is (docs/rules.md, "Rich email")."""
    rendered = _rendered(version, data)
    if rendered.text is not None:
        return rendered
    return engine.Rendered(subject=rendered.subject, html=rendered.html, text=text_part(rendered.html))


def _rendered(version: TemplateVersion, data: Mapping[str, Any]) -> engine.Rendered:
    return engine.render(engine.compiled(_parts(version)), data, alias=version.template.alias)


def _parts(version: TemplateVersion) -> engine.Parts:
    return engine.Parts(subject=version.subject, html=version.html, text=version.text)


def _templates_named(account: Account, template: str) -> QuerySet[Template]:
    """The account's template whose id or alias is ``template``, as a query."""
    named = Q(alias=template)
    if TEMPLATE_ID.fullmatch(template):  # never an alias's shape, which the alias's field refuses
        named |= Q(id=uuid.UUID(template))
    return Template.objects.filter(named, account=account)
