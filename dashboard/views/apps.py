"""The holder's apps (docs/customer-webhooks.md): listed, added, renamed, deleted; and each app's pages
(dashboard/views/app_pages.py) for any of the holder's apps, by the app's id in the URL."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from accounts.models import Account
from core.actor import HOLDER
from core.errors import AppNotFound, AppUidTaken
from customer_webhooks.models import App
from customer_webhooks.portal import portal_link_create, portal_links_revoke
from customer_webhooks.selectors import app_get, app_list
from customer_webhooks.services import app_create, app_delete, app_update
from dashboard.forms import AppForm, PageForm
from dashboard.views import app_pages
from dashboard.views.app_pages import AppAccess
from dashboard.views.base import HolderView, no_store
from dashboard.views.paging import numbered_pages

APPS_PER_PAGE = 25
UID_KEPT = "An app's uid can be changed but not removed."


def _holder_app(account: Account, app_id: UUID) -> App:
    """The holder's app of this id; another account's or none is the 404 page, as another account's job is."""
    try:
        return app_get(account=account, app=str(app_id))
    except AppNotFound as error:
        raise Http404(error.message) from None


class AppsView(HolderView, View):
    """The list, newest first, paged by GET; adding one posts back here and, once done, opens the app."""

    template_name = "dashboard/apps.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request, AppForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        form = AppForm(request.POST)
        if form.is_valid():
            try:
                app = app_create(account=self.account, **form.cleaned_data)
            except AppUidTaken as error:
                form.add_error("uid", error.message)
            else:
                messages.success(request, f"App {app.name} is added: add its endpoints below.")
                return redirect("app", app_id=app.id)
        return self._page(request, form, status=400)

    def _page(self, request: HttpRequest, form: AppForm, status: int = 200) -> HttpResponse:
        page_form = PageForm(request.GET)
        if not page_form.is_valid():
            context = {"form": form, "page_form": page_form, "apps": [], "page": 1}
            return render(request, self.template_name, context, status=400)
        page = page_form.cleaned_data["page"] or 1
        apps, total = app_list(account=self.account, page=page, limit=APPS_PER_PAGE)
        pager = numbered_pages(request.GET, page=page, per_page=APPS_PER_PAGE, total=total)
        context = {"form": form, "page_form": page_form, "apps": apps, "total": total, **pager}
        return render(request, self.template_name, context, status=status)


class AppEditView(HolderView, View):
    """Renames the app or gives it another uid."""

    template_name = "dashboard/app_edit.html"

    def get(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        app = _holder_app(self.account, app_id)
        form = AppForm(initial={"name": app.name, "uid": app.uid or ""})
        return render(request, self.template_name, {"app": app, "form": form})

    def post(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        app = _holder_app(self.account, app_id)
        form = AppForm(request.POST)
        if form.is_valid() and app.uid and not form.cleaned_data["uid"]:
            form.add_error("uid", UID_KEPT)  # the API gives no way to take a uid away either
        if form.is_valid():
            try:
                app_update(app=app, **form.cleaned_data)
            except AppUidTaken as error:
                form.add_error("uid", error.message)
            else:
                messages.success(request, f"App {app.name} is saved.")
                return redirect("app", app_id=app.id)
        # The heading names the app as stored: a refused change has not happened.
        app.refresh_from_db()
        return render(request, self.template_name, {"app": app, "form": form}, status=400)


class AppDeleteView(HolderView, View):
    """GET asks to confirm, POST deletes the app with its endpoints and messages."""

    def get(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        return render(request, "dashboard/app_delete.html", {"app": _holder_app(self.account, app_id)})

    def post(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        app = _holder_app(self.account, app_id)
        app_delete(app)
        messages.success(request, f"App {app.name} is deleted with its endpoints and messages.")
        return redirect("apps")


class AppPortalLinkView(HolderView, View):
    """POST only, the `Portal link` button: a new consumer portal link, made and audited as the API makes it, shown in
    this answer alone, which no cache keeps (never in a URL or a message: it is a bearer secret)."""

    def post(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        app = _holder_app(self.account, app_id)
        link = portal_link_create(app=app)
        return no_store(render(request, "dashboard/app_portal_link.html", {"app": app, "link": link}))


class AppPortalRevokeView(HolderView, View):
    """GET asks to confirm, POST ends every portal link of the app made until now and the sessions opened with them,
    as the API's revoke does."""

    def get(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        return render(request, "dashboard/app_portal_revoke.html", {"app": _holder_app(self.account, app_id)})

    def post(self, request: HttpRequest, app_id: UUID) -> HttpResponse:
        app = _holder_app(self.account, app_id)
        portal_links_revoke(app=app)
        messages.success(
            request,
            f"The portal links of app {app.name} made until now are ended, with their sessions: links you "
            "make from now on work.",
        )
        return redirect(reverse("app", args=[app.id]) + "#portal")


class HolderAppPage(HolderView):
    """An app page of the holder's, for any of its apps, by the ``app_id`` in the URL; changes are the holder's."""

    def app_access(self, kwargs: dict[str, Any]) -> AppAccess:
        app = _holder_app(self.account, kwargs.pop("app_id"))
        return AppAccess(
            account=self.account,
            app=app,
            actor=HOLDER,
            root=reverse("app", args=[app.id]),
            base_template="base.html",
            app_edit_url=reverse("app-edit", args=[app.id]),
            app_delete_url=reverse("app-delete", args=[app.id]),
            portal_link_url=reverse("app-portal-link", args=[app.id]),
            portal_revoke_url=reverse("app-portal-revoke", args=[app.id]),
            jobs_url=reverse("jobs"),
        )


class AppView(HolderAppPage, app_pages.AppPage):
    """The app's endpoints, adding one, and its recent messages."""


class EndpointView(HolderAppPage, app_pages.EndpointPage):
    """One endpoint, changed."""


class EndpointDisableView(HolderAppPage, app_pages.EndpointStatePage):
    """POST only, the `Disable` button."""

    disabled = True


class EndpointEnableView(HolderAppPage, app_pages.EndpointStatePage):
    """POST only, the `Enable` button."""

    disabled = False


class EndpointDeleteView(HolderAppPage, app_pages.EndpointDeletePage):
    """The question, then the deletion."""


class EndpointSecretView(HolderAppPage, app_pages.EndpointSecretPage):
    """POST only, the `Reveal secret` button."""


class EndpointRotateView(HolderAppPage, app_pages.EndpointRotatePage):
    """The question, then the new secret."""


class EndpointRecoverView(HolderAppPage, app_pages.EndpointRecoverPage):
    """POST only, the recover form."""


class MessageView(HolderAppPage, app_pages.MessagePage):
    """One message and its deliveries."""


class DeliveryResendView(HolderAppPage, app_pages.DeliveryResendPage):
    """POST only, a failed delivery's `Resend` button."""
