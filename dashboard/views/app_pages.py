"""One app's pages: its endpoints (added, changed, disabled and enabled, deleted), each endpoint's secret (shown on
request, rotated), its failed deliveries recovered, and the app's recent messages with each delivery
(docs/dashboard.md, "The apps pages").

Each page acts on one app through an ``AppAccess``: which app, who acts on it, where its pages are and what page
holds them. The holder's dashboard gives one for any of the holder's apps (dashboard/views/apps.py); the pages and
their templates (``templates/apps/``) name nothing else, so a page set that reaches a single app gives its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.dateformat import format as date_format
from django.views import View

from accounts.models import Account
from core.actor import acting_as, request_actor
from core.errors import DomainError, EndpointNotFound, MessageNotFound
from customer_webhooks.messages import endpoint_recover, message_get, message_list
from customer_webhooks.models import ENDPOINTS_PER_APP, App, Endpoint, Message
from customer_webhooks.selectors import endpoint_get, endpoint_list
from customer_webhooks.services import (
    endpoint_create,
    endpoint_delete,
    endpoint_secret_reveal,
    endpoint_secret_rotate,
    endpoint_update,
)
from dashboard.forms import EndpointForm, EndpointRecoverForm, PageForm
from dashboard.views.base import no_store
from dashboard.views.paging import numbered_pages
from notifications.engine.app_endpoints import FAILING, GONE
from notifications.selectors import delivery_logs_by_job
from notifications.services import job_retry

MESSAGES_PER_PAGE = 25
SECRET_WARNINGS = {
    "holder": (
        "Hand this secret to the endpoint's owner only: whoever holds it can sign deliveries to this endpoint as "
        "NotifyHub does. This page is not kept: reveal the secret again when you need it."
    ),
    "customer": (
        "Keep this secret on the server that receives the deliveries only: whoever holds it can sign deliveries to "
        "this endpoint. This page is not kept: reveal the secret again when you need it."
    ),
}


@dataclass(frozen=True)
class AppAccess:
    """One app and who acts on it. ``root`` is the app's page, the other pages' URLs below it; ``base_template``
    the page around them, with its navigation. ``app_edit_url``, ``app_delete_url``, ``portal_link_url``,
    ``portal_revoke_url`` and ``jobs_url`` lead where the reader renames or deletes the app, makes a consumer portal
    link or ends them, and reads a delivery's job: None where the reader may not. ``reader`` is
    whom the pages' words address: the app's holder, or the customer the app is for (the consumer portal)."""

    account: Account
    app: App
    # Whom the audit log names for each change: "holder" on the dashboard (core/actor.py).
    actor: str
    root: str
    base_template: str
    app_edit_url: str | None = None
    app_delete_url: str | None = None
    portal_link_url: str | None = None
    portal_revoke_url: str | None = None
    jobs_url: str | None = None
    reader: Literal["holder", "customer"] = "holder"

    @contextmanager
    def acting(self, request: HttpRequest) -> Iterator[None]:
        """The changes made inside are this access's actor's, from the request's address."""
        with acting_as(self.actor, request_actor(request).ip):
            yield

    def endpoint(self, endpoint_id: UUID) -> Endpoint:
        """The app's endpoint of this id; another app's, another account's or none is the 404 page."""
        try:
            return endpoint_get(app=self.app, endpoint_id=str(endpoint_id))
        except EndpointNotFound as error:
            raise Http404(error.message) from None

    def endpoint_url(self, endpoint: Endpoint) -> str:
        return f"{self.root}endpoints/{endpoint.id}/"


class AppPageView(View):
    """A page of one app: ``self.access``, which ``app_access`` gives from the URL's arguments, taking away those it
    reads, before the page's handler runs."""

    access: AppAccess

    def app_access(self, kwargs: dict[str, Any]) -> AppAccess:
        raise NotImplementedError  # the page set's mixin says how the app is reached

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        self.access = self.app_access(kwargs)
        return super().dispatch(request, *args, **kwargs)

    def page(self, request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
        return render(request, template, {"access": self.access, "app": self.access.app, **context}, status=status)


def disabled_words(endpoint: Endpoint) -> str:
    """Why the endpoint receives nothing, as its page says it; empty when it is enabled."""
    if not endpoint.disabled:
        return ""
    if endpoint.disabled_reason == GONE:
        return "Disabled by NotifyHub: it answered 410 Gone."
    if endpoint.disabled_reason == FAILING:
        return f"Disabled by NotifyHub: every delivery failed for {_duration(settings.ENDPOINT_DISABLE_AFTER_SECONDS)}."
    return "Disabled."


def _duration(seconds: int) -> str:
    days, hours = seconds // 86400, seconds // 3600
    if days and not seconds % 86400:
        return f"{days} day{'s' if days != 1 else ''}"
    return f"{hours} hour{'s' if hours != 1 else ''}" if hours else f"{seconds} seconds"


class AppPage(AppPageView):
    """The app's endpoints, the form adding one, and its recent live messages, paged by GET."""

    template_name = "apps/app.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request, EndpointForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        form = EndpointForm(request.POST)
        if form.is_valid():
            try:
                with self.access.acting(request):
                    endpoint = endpoint_create(app=self.access.app, **form.cleaned_data)
            except DomainError as error:  # the app's 21st endpoint
                form.add_error(None, error.message)
            else:
                messages.success(request, f"Endpoint {endpoint.url} is added; its secret signs its deliveries.")
                return redirect(self.access.endpoint_url(endpoint))
        return self._page(request, form, status=400)

    def _page(self, request: HttpRequest, form: EndpointForm, status: int = 200) -> HttpResponse:
        endpoints = endpoint_list(app=self.access.app)
        context: dict[str, Any] = {
            "form": form,
            "endpoints": [(endpoint, disabled_words(endpoint)) for endpoint in endpoints],
            "endpoint_limit": ENDPOINTS_PER_APP,
            "page_form": (page_form := PageForm(request.GET)),
        }
        if page_form.is_valid():
            page = page_form.cleaned_data["page"] or 1
            # The dashboard shows the holder's live data: a test key's messages are that key's to read.
            found, total = message_list(
                app=self.access.app, test=False, event_type=None, page=page, limit=MESSAGES_PER_PAGE
            )
            pager = numbered_pages(request.GET, page=page, per_page=MESSAGES_PER_PAGE, total=total)
            context.update(app_messages=found, total=total, **pager)
        else:
            context.update(app_messages=[], page=1)
            status = 400
        return self.page(request, self.template_name, context, status=status)


class EndpointPage(AppPageView):
    """One endpoint: its fields in the form, saved by POST; its state, secret, recovery and deletion."""

    def get(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        return endpoint_page(self, request, self.access.endpoint(endpoint_id))

    def post(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        endpoint = self.access.endpoint(endpoint_id)
        form = EndpointForm(request.POST)
        if not form.is_valid():
            return endpoint_page(self, request, endpoint, form=form, status=400)
        with self.access.acting(request):
            endpoint_update(endpoint=endpoint, changes=form.changes(endpoint))
        messages.success(request, f"Endpoint {endpoint.url} is saved.")
        return redirect(self.access.endpoint_url(endpoint))


def endpoint_page(
    view: AppPageView,
    request: HttpRequest,
    endpoint: Endpoint,
    *,
    form: EndpointForm | None = None,
    recover_form: EndpointRecoverForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """The endpoint's page, with a refused form kept as it was sent."""
    context = {
        "endpoint": endpoint,
        "disabled_words": disabled_words(endpoint),
        "form": form or EndpointForm(initial=EndpointForm.initial_of(endpoint)),
        "recover_form": recover_form or EndpointRecoverForm(),
    }
    return view.page(request, "apps/endpoint.html", context, status=status)


class EndpointStatePage(AppPageView):
    """POST only: disables the endpoint, or enables it afresh (``disabled`` says which)."""

    disabled = False

    def post(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        endpoint = self.access.endpoint(endpoint_id)
        with self.access.acting(request):
            endpoint_update(endpoint=endpoint, changes={"disabled": self.disabled})
        if self.disabled:
            messages.success(request, f"Endpoint {endpoint.url} is disabled: it receives nothing until enabled.")
        else:
            messages.success(request, f"Endpoint {endpoint.url} is enabled: new messages go to it again.")
        return redirect(self.access.endpoint_url(endpoint))


class EndpointDeletePage(AppPageView):
    """GET asks to confirm, POST deletes: the question is a page of its own, so it needs no script."""

    def get(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        return self.page(request, "apps/endpoint_delete.html", {"endpoint": self.access.endpoint(endpoint_id)})

    def post(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        endpoint = self.access.endpoint(endpoint_id)
        with self.access.acting(request):
            endpoint_delete(endpoint)
        messages.success(request, f"Endpoint {endpoint.url} is deleted with its deliveries.")
        return redirect(self.access.root)


class EndpointSecretPage(AppPageView):
    """POST only, the reveal button: the endpoint's secret, shown in this answer alone, which no cache keeps."""

    def post(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        endpoint = self.access.endpoint(endpoint_id)
        with self.access.acting(request):
            secret = endpoint_secret_reveal(endpoint)
        context = {"endpoint": endpoint, "secret": secret, "warning": SECRET_WARNINGS[self.access.reader]}
        return no_store(self.page(request, "apps/endpoint_secret.html", context))


class EndpointRotatePage(AppPageView):
    """GET asks to confirm; POST gives the endpoint a new secret and shows it, as the reveal does."""

    def get(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        context = {"endpoint": self.access.endpoint(endpoint_id), **_overlap()}
        return self.page(request, "apps/endpoint_rotate.html", context)

    def post(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        endpoint = self.access.endpoint(endpoint_id)
        with self.access.acting(request):
            secret = endpoint_secret_rotate(endpoint)
        warning = SECRET_WARNINGS[self.access.reader]
        context = {"endpoint": endpoint, "secret": secret, "warning": warning, "rotated": True, **_overlap()}
        return no_store(self.page(request, "apps/endpoint_secret.html", context))


def _overlap() -> dict[str, str]:
    """How long a replaced secret keeps signing, in words (SIGNING_SECRET_OVERLAP_SECONDS; none when 0)."""
    seconds = settings.SIGNING_SECRET_OVERLAP_SECONDS
    return {"overlap": _duration(seconds) if seconds else ""}


class EndpointRecoverPage(AppPageView):
    """POST only, the recover form: re-queues the endpoint's failed live deliveries since a time."""

    def post(self, request: HttpRequest, endpoint_id: UUID) -> HttpResponse:
        endpoint = self.access.endpoint(endpoint_id)
        form = EndpointRecoverForm(request.POST)
        if not form.is_valid():
            return endpoint_page(self, request, endpoint, recover_form=form, status=400)
        # The dashboard's deliveries are live ones, as its messages are.
        with self.access.acting(request):
            requeued = endpoint_recover(
                account=self.access.account, endpoint=endpoint, since=form.cleaned_data["since"], test=False
            )
        since = date_format(form.cleaned_data["since"], "M j, Y, H:i")
        if requeued == 1:
            messages.success(request, f"1 delivery that failed since {since} UTC is queued again.")
        elif requeued:
            messages.success(request, f"{requeued} deliveries that failed since {since} UTC are queued again.")
        else:
            messages.info(request, f"No delivery to this endpoint failed since {since} UTC: nothing to recover.")
        return redirect(self.access.endpoint_url(endpoint))


def _live_message(access: AppAccess, message_id: UUID) -> Message:
    """The app's live message of this id; another app's, a test message or none is the 404 page."""
    try:
        return message_get(app=access.app, message_id=str(message_id), test=False)
    except MessageNotFound as error:
        raise Http404(error.message) from None


class MessagePage(AppPageView):
    """One live message: its payload and each delivery (endpoint, status, attempts one by one, next attempt)."""

    def get(self, request: HttpRequest, message_id: UUID) -> HttpResponse:
        message = _live_message(self.access, message_id)
        # A delivery goes with its endpoint (deleting one deletes the other), so each has its endpoint here.
        endpoints = {endpoint.id: endpoint for endpoint in endpoint_list(app=self.access.app)}
        jobs = [(job, endpoints[job.endpoint_id]) for job in message.deliveries.all() if job.endpoint_id]
        logs = delivery_logs_by_job([job.id for job, _ in jobs])
        deliveries = [(job, endpoint, logs[job.id]) for job, endpoint in jobs]
        payload = json.dumps(message.payload, indent=2, ensure_ascii=False)
        context = {"message": message, "payload": payload, "deliveries": deliveries}
        return self.page(request, "apps/message.html", context)


class DeliveryResendPage(AppPageView):
    """POST only, a failed delivery's `Resend` button: queues it again as Retry Job does (attempts from zero, its
    logs kept, the quota's rules the same)."""

    def post(self, request: HttpRequest, message_id: UUID, job_id: UUID) -> HttpResponse:
        message = _live_message(self.access, message_id)
        if not any(job.id == job_id for job in message.deliveries.all()):
            raise Http404("Delivery not found")
        message_url = f"{self.access.root}messages/{message.id}/"
        try:
            job_retry(account=self.access.account, job_id=str(job_id), test=False)
        except DomainError as error:  # no longer failed, or the month's quota spent
            messages.error(request, error.message)
        else:
            messages.success(request, "The delivery is queued again: its attempts start over.")
        return redirect(f"{message_url}#deliveries")
