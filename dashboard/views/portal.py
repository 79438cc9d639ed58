"""The consumer portal (docs/customer-webhooks.md, "Consumer portal"): one app's pages (dashboard/views/app_pages.py)
for the customer the app is for, who has no NotifyHub account, opened from a signed link the holder made with
``POST /api/v1/apps/<app>/portal`` (customer_webhooks/portal.py).

Opening the link (``/portal/<token>/``) checks it, gives the browser a session of its own, a signed cookie
``notifyhub_portal`` sent to ``/portal/`` only, ending when the link does, and redirects to ``/portal/``: past that
answer the token is in no URL the browser keeps or sends as a ``Referer``; the link's answers say
``Referrer-Policy: no-referrer``, the pages ``same-origin`` (``PAGE_REFERRER_POLICY``). The session names one app
and reaches nothing else: every page below ``/portal/`` is that app's, and the app pages' own checks make another
app's endpoint or message the refusal page.
It is apart from the dashboard's session (a holder signed in to the dashboard in the same browser keeps theirs);
Django's CSRF check, which keeps its token in a cookie of its own, guards every form as on the dashboard.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from accounts.models import Account
from core.actor import portal
from core.signin import bad_link_count, bad_link_refusal
from customer_webhooks.models import App
from customer_webhooks.portal import SESSION_SALT, PortalGrant, portal_account, portal_app, portal_grant_read
from dashboard.views import app_pages
from dashboard.views.app_pages import AppAccess

SESSION_COOKIE = "notifyhub_portal"
# What the page's limit on bad links counts under (core/signin.py).
LIMITED_AS = "portal"
REFUSED = "portal/refused.html"
EXPIRED = "portal/expired.html"


# The portal's pages: no request to another site carries a Referer. Not ``no-referrer``: under it a browser posts a
# form with ``Origin: null``, which Django's CSRF check refuses; and no page's URL holds a token.
PAGE_REFERRER_POLICY = "same-origin"
# The link's answers, whose URL holds the token: no request they lead to (the redirect, a stylesheet) carries one.
LINK_REFERRER_POLICY = "no-referrer"


def _with_policy(response: HttpResponseBase, policy: str) -> HttpResponseBase:
    response["Referrer-Policy"] = policy
    return response


def _refused(request: HttpRequest, status: int, account: Account | None = None) -> HttpResponse:
    """The refusal, with no detail: a link or session NotifyHub did not sign, an app or account deleted since, or
    (inside a session) an endpoint or message that is not the app's."""
    context = {"product_name": account.product_name if account else "", "in_session": account is not None}
    return render(request, REFUSED, context, status=status)


def _expired(request: HttpRequest, grant: PortalGrant) -> HttpResponse:
    """A link or session whose time is up, or which the holder ended (`End portal sessions`): the page says to ask
    for a new link, naming whom to ask."""
    account = portal_account(grant)
    return render(request, EXPIRED, {"product_name": account.product_name if account else ""}, status=403)


def _granted_app(request: HttpRequest, grant: PortalGrant) -> App | HttpResponse:
    """The app a link or session NotifyHub signed opens, or the page refusing it: its time is up or the holder ended
    its links (the expired page), or the app or its account is deleted since (the refusal)."""
    if grant.expired:
        return _expired(request, grant)
    app = portal_app(grant)
    if app is None:
        return _refused(request, 404)
    if grant.revoked(app):
        return _expired(request, grant)
    return app


class PortalOpenView(View):
    """GET ``/portal/<token>/``: the link. Checked, it opens the session and redirects to the portal's first page."""

    def get(self, request: HttpRequest, token: str) -> HttpResponseBase:
        return _with_policy(self._answer(request, token), LINK_REFERRER_POLICY)

    def _answer(self, request: HttpRequest, token: str) -> HttpResponseBase:
        refusal = bad_link_refusal(request, LIMITED_AS)
        if refusal is not None:
            return refusal
        grant = portal_grant_read(token)
        if grant is None:
            bad_link_count(request, LIMITED_AS)
            return _refused(request, 404)
        app_or_refusal = _granted_app(request, grant)
        if not isinstance(app_or_refusal, App):
            return app_or_refusal
        response = redirect("portal")
        response.set_cookie(
            SESSION_COOKIE,
            grant.sign(SESSION_SALT),
            # A browser session's cookie: the expiry signed in it ends the portal's session, and a page then says
            # so, naming whom to ask for a new link (a cookie the browser dropped would leave it nothing to name).
            path=reverse("portal"),
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            # Lax: sent on the redirect that follows a link clicked on another site (the holder's), never with a
            # form posted from one.
            samesite="Lax",
        )
        response["Cache-Control"] = "no-store"
        return response


class PortalPage:
    """A portal page: the session's app, reached through an ``AppAccess`` whose changes are ``portal:<app>``'s. No
    session is 403, one whose time is up or whose links the holder ended the page saying so, an app deleted since and
    any id that is not the app's the 404 refusal."""

    app: App

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return _with_policy(self._answer(request, *args, **kwargs), PAGE_REFERRER_POLICY)

    def _answer(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        grant = portal_grant_read(request.COOKIES.get(SESSION_COOKIE, ""), salt=SESSION_SALT)
        if grant is None:
            return _refused(request, 403)
        app = _granted_app(request, grant)
        if not isinstance(app, App):
            return app
        self.app = app
        try:
            response: HttpResponseBase = super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
        except Http404:
            return _refused(request, 404, app.account)
        return response

    def app_access(self, kwargs: dict[str, Any]) -> AppAccess:
        return AppAccess(
            account=self.app.account,
            app=self.app,
            actor=portal(self.app.uid or str(self.app.id)),
            root=reverse("portal"),
            base_template="portal/base.html",
            reader="customer",
        )


class AppView(PortalPage, app_pages.AppPage):
    """The app's endpoints, adding one, and its recent messages."""


class EndpointView(PortalPage, app_pages.EndpointPage):
    """One endpoint, changed."""


class EndpointDisableView(PortalPage, app_pages.EndpointStatePage):
    """POST only, the `Disable` button."""

    disabled = True


class EndpointEnableView(PortalPage, app_pages.EndpointStatePage):
    """POST only, the `Enable` button."""

    disabled = False


class EndpointDeleteView(PortalPage, app_pages.EndpointDeletePage):
    """The question, then the deletion."""


class EndpointSecretView(PortalPage, app_pages.EndpointSecretPage):
    """POST only, the `Reveal secret` button."""


class EndpointRotateView(PortalPage, app_pages.EndpointRotatePage):
    """The question, then the new secret."""


class EndpointRecoverView(PortalPage, app_pages.EndpointRecoverPage):
    """POST only, the recover form."""


class MessageView(PortalPage, app_pages.MessagePage):
    """One message, its deliveries and their attempts."""


class DeliveryResendView(PortalPage, app_pages.DeliveryResendPage):
    """POST only, a failed delivery's `Resend` button."""
