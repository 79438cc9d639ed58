"""Email templates: the account's, created, edited (each save a new version), their versions read, previewed with
sample data in a sandboxed frame, sent as a test to the holder's own address, and deleted."""

from __future__ import annotations

import secrets
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound
from django.shortcuts import redirect, render
from django.views import View

from accounts.models import Account
from core.errors import DomainError, NotPermitted, TemplateAliasTaken, TemplateNotFound, TemplateVersionNotFound
from dashboard.forms import PageForm, TemplateForm, TemplatePreviewForm
from dashboard.views.base import HolderView
from dashboard.views.paging import numbered_pages
from dashboard.views.webhooks import TESTS_PER_MINUTE, over_test_limit
from email_templates.models import TEMPLATES_PER_ACCOUNT, Template, TemplateVersion
from email_templates.selectors import (
    template_get,
    template_list,
    template_preview,
    template_version_get,
    template_version_list,
)
from email_templates.services import template_create, template_delete, template_update
from notifications.services import email_test_send
from providers.names import ProviderName

TEMPLATES_PER_PAGE = 25
VERSIONS_PER_PAGE = 25
# What the preview's sample data starts as: the holder fills in the variables the page lists.
EMPTY_DATA = "{}"
# How long a rendered preview waits for its frame to ask for it: the frame asks as the page loads.
PREVIEW_KEPT_SECONDS = 600
# The preview frame's own answer (docs/dashboard.md, "The templates pages"): the email's inline styles and remote
# images apply, as in a recipient's email program; `sandbox` with no allow-* token gives the document an opaque
# origin of its own and runs no script, form, popup or navigation of the top page
# (https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/Content-Security-Policy/sandbox); only the
# dashboard's own pages may frame it.
PREVIEW_FRAME_HEADERS = {
    "Content-Security-Policy": (
        "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; frame-ancestors 'self'"
    ),
    "X-Frame-Options": "SAMEORIGIN",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
}
PREVIEW_GONE = "This preview is no longer kept: press Preview again."


class _TemplatePage(HolderView):
    """A page of one of the holder's templates, named by its id in the URL (an alias could be `new`)."""

    def _template(self, template_id: UUID) -> Template:
        """The holder's template of this id; another account's, a deleted one or none is the 404 page, as another
        account's job is."""
        try:
            return template_get(account=self.account, template=str(template_id))
        except TemplateNotFound as error:
            raise Http404(error.message) from None

    def _version(self, template: Template, number: int | None = None) -> TemplateVersion:
        try:
            return template_version_get(template=template, version=number)
        except TemplateVersionNotFound as error:
            raise Http404(error.message) from None


class TemplatesView(HolderView, View):
    """The list, by alias, paged by GET."""

    template_name = "dashboard/templates.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        form = PageForm(request.GET)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form, "templates": [], "page": 1}, status=400)
        page = form.cleaned_data["page"] or 1
        templates, total = template_list(account=self.account, page=page, limit=TEMPLATES_PER_PAGE)
        pager = numbered_pages(request.GET, page=page, per_page=TEMPLATES_PER_PAGE, total=total)
        context = {"form": form, "templates": templates, "total": total, "limit": TEMPLATES_PER_ACCOUNT, **pager}
        return render(request, self.template_name, context)


class TemplateCreateView(HolderView, View):
    """A new template, saved as its version 1; a refused form comes back with what was typed."""

    template_name = "dashboard/template_form.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": TemplateForm(creating=True)})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = TemplateForm(request.POST, creating=True)
        if form.is_valid():
            try:
                version = template_create(account=self.account, **form.cleaned_data)
            except TemplateAliasTaken as error:
                form.add_error("alias", error.message)
            except DomainError as error:  # a syntax error naming its part and line, or the account's 100th
                form.add_error(None, error.message)
            else:
                messages.success(request, f"Template {version.template.alias} is saved as version 1.")
                return redirect("template", template_id=version.template.id)
        return render(request, self.template_name, {"form": form}, status=400)


class TemplateEditView(_TemplatePage, View):
    """The current version in the form; saving makes the next version, which becomes current."""

    template_name = "dashboard/template_form.html"

    def get(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        current = self._version(template)
        initial = {"name": template.name, "subject": current.subject, "html": current.html, "text": current.text}
        return self._page(request, template, current, TemplateForm(initial=initial, creating=False))

    def post(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        form = TemplateForm(request.POST, creating=False)
        if form.is_valid():
            try:
                version = template_update(template=template, **form.cleaned_data)
            except DomainError as error:  # a syntax error naming its part and line
                form.add_error(None, error.message)
            else:
                messages.success(request, f"Template {template.alias} is saved as version {version.version}.")
                return redirect("template", template_id=template.id)
        return self._page(request, template, self._version(template), form, status=400)

    def _page(
        self, request: HttpRequest, template: Template, current: TemplateVersion, form: TemplateForm, status: int = 200
    ) -> HttpResponse:
        context = {"template": template, "current": current, "form": form}
        return render(request, self.template_name, context, status=status)


class TemplateVersionsView(_TemplatePage, View):
    """The template's versions, newest first, paged by GET."""

    template_name = "dashboard/template_versions.html"

    def get(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        form = PageForm(request.GET)
        if not form.is_valid():
            context = {"template": template, "form": form, "versions": [], "page": 1}
            return render(request, self.template_name, context, status=400)
        page = form.cleaned_data["page"] or 1
        versions, total = template_version_list(template=template, page=page, limit=VERSIONS_PER_PAGE)
        pager = numbered_pages(request.GET, page=page, per_page=VERSIONS_PER_PAGE, total=total)
        current = self._version(template).version
        context = {"template": template, "form": form, "versions": versions, "current": current, **pager}
        return render(request, self.template_name, context)


class TemplateVersionView(_TemplatePage, View):
    """One version, read only: a version never changes once saved."""

    def get(self, request: HttpRequest, template_id: UUID, number: int) -> HttpResponse:
        template = self._template(template_id)
        version = self._version(template, number)
        current = self._version(template).version
        context = {"template": template, "version": version, "is_current": version.version == current}
        return render(request, "dashboard/template_version.html", context)


def _preview_key(account: Account) -> str:
    return f"dashboard:template-preview:{account.pk}"


def _preview_keep(account: Account, template: Template, html: str) -> str:
    """Keeps the rendered HTML for the page's frame to load, and answers the token naming it. One preview an
    account: the newest replaces the one before, so what is kept stays small whatever a holder presses."""
    token = secrets.token_urlsafe(16)
    kept = {"token": token, "template": str(template.id), "html": html}
    cache.set(_preview_key(account), kept, timeout=PREVIEW_KEPT_SECONDS)
    return token


def _preview_kept(account: Account, template: Template, token: str) -> str | None:
    kept = cache.get(_preview_key(account))
    if kept is None or kept["token"] != token or kept["template"] != str(template.id):
        return None
    return str(kept["html"])


class TemplatePreviewView(_TemplatePage, View):
    """The current version rendered with sample data, as the API's render does; the same sent as a test email to
    the holder's own address. Both are the POST's own answer: what they show exists nowhere to redirect to. The
    subject, the text and any refusal are on this page; the HTML is kept for the frame, which loads it from
    TemplatePreviewFrameView under a policy of its own, this page's staying strict."""

    template_name = "dashboard/template_preview.html"

    def get(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        return self._page(request, template, TemplatePreviewForm(initial={"sample_data": EMPTY_DATA}))

    def post(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        form = TemplatePreviewForm(request.POST)
        if not form.is_valid():
            return self._page(request, template, form, status=400)
        sending = request.POST.get("action") == "send-test"
        if sending and (refusal := over_test_limit(request, self.account, kind="email")):
            form.add_error(None, refusal)
            return self._page(request, template, form, status=429)
        try:
            rendered = template_preview(version=self._version(template), data=form.cleaned_data["sample_data"])
        except DomainError as error:  # data missing a variable, or the render failed (a limit, a filter)
            form.add_error("sample_data", error.message)
            return self._page(request, template, form, status=400)
        frame_token = _preview_keep(self.account, template, rendered.html)
        if not sending:
            return self._page(request, template, form, rendered=rendered, frame_token=frame_token)
        try:
            result = email_test_send(
                account=self.account, subject=rendered.subject, html=rendered.html, text=rendered.text
            )
        except DomainError as error:  # unconfirmed, or the account's email cannot go out (no key, no domain)
            form.add_error(None, error.message)
            status = 403 if isinstance(error, NotPermitted) else 400
            return self._page(request, template, form, rendered=rendered, frame_token=frame_token, status=status)
        used = result.outcome.used_provider  # named on paid plans only, as in a delivery log
        provider = ProviderName(used).label if used else None
        return self._page(
            request,
            template,
            form,
            rendered=rendered,
            frame_token=frame_token,
            test_result=result,
            test_provider=provider,
        )

    def _page(
        self, request: HttpRequest, template: Template, form: TemplatePreviewForm, status: int = 200, **extra: Any
    ) -> HttpResponse:
        context = {
            "template": template,
            "current": self._version(template),
            "form": form,
            "tests_per_minute": TESTS_PER_MINUTE,
            **extra,
        }
        return render(request, self.template_name, context, status=status)


class TemplatePreviewFrameView(_TemplatePage, View):
    """The preview's HTML, alone, for the preview page's frame: the holder's own template and the token their last
    preview of it gave, else 404. GET only: it changes nothing."""

    def get(self, request: HttpRequest, template_id: UUID, token: str) -> HttpResponse:
        html = _preview_kept(self.account, self._template(template_id), token)
        if html is None:
            return HttpResponseNotFound(
                PREVIEW_GONE, content_type="text/plain; charset=utf-8", headers=PREVIEW_FRAME_HEADERS
            )
        return HttpResponse(html, headers=PREVIEW_FRAME_HEADERS)


class TemplateDeleteView(_TemplatePage, View):
    """GET asks to confirm, POST deletes: the question is a page of its own, so it needs no script."""

    def get(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        context = {"template": template, "current": self._version(template)}
        return render(request, "dashboard/template_delete.html", context)

    def post(self, request: HttpRequest, template_id: UUID) -> HttpResponse:
        template = self._template(template_id)
        template_delete(template)
        messages.success(request, f"Template {template.alias} is deleted: sends naming it are refused.")
        return redirect("templates")
