"""The unsubscribe page of an email sent with a topic (docs/suppressions.md, "One-click unsubscribe"), open to
anyone holding its link: the recipient, no session.

POST unsubscribes. A mail client posts ``List-Unsubscribe=One-Click`` with no cookie and no CSRF token
(RFC 8058, section 3.2) and hears 200; the page's own button posts the same and comes back to the page. The link's
signed token is what grants it, so a form from another site can do nothing a holder of the link could not, and the
views need no CSRF token. GET only shows the page: mail scanners open links, and a GET changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from core.signin import bad_link_count, bad_link_refusal
from domains.selectors import sending_domain_name
from suppressions.models import SuppressionReason
from suppressions.selectors import suppression_entry
from suppressions.services import suppression_resubscribe, suppression_unsubscribe
from suppressions.unsubscribe import ONE_CLICK_FIELD, ONE_CLICK_VALUE, Unsubscription, unsubscription_read

TEMPLATE = "unsubscribe/page.html"
# What the page's limit on bad links counts under (core/signin.py).
LIMITED_AS = "unsubscribe"
ONE_CLICK_ANSWER = "You are unsubscribed."


def masked_address(email: str) -> str:
    """The address as the page shows it, to whoever holds the link: its first character, then its domain."""
    local, _, domain = email.rpartition("@")
    return f"{local[:1]}***@{domain}"


class _LinkView(View):
    """Reads the link's token; an unsigned one is counted against the client's network and answered 404, with
    nothing changed."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        token: str = kwargs.pop("token")
        refusal = bad_link_refusal(request, LIMITED_AS)
        if refusal is not None:
            return refusal
        unsubscription = unsubscription_read(token)
        if unsubscription is None:
            bad_link_count(request, LIMITED_AS)
            return render(request, TEMPLATE, {"valid": False}, status=404)
        self.unsubscription = unsubscription
        self.token = token
        return super().dispatch(request, *args, **kwargs)


@method_decorator(csrf_exempt, name="dispatch")
class UnsubscribeView(_LinkView):
    def get(self, request: HttpRequest) -> HttpResponse:
        return _page(request, self.unsubscription, self.token)

    def post(self, request: HttpRequest) -> HttpResponse:
        found = self.unsubscription
        suppression_unsubscribe(account_id=found.account_id, email=found.email, topic=found.topic)
        if request.POST.get(ONE_CLICK_FIELD) == ONE_CLICK_VALUE:
            return HttpResponse(ONE_CLICK_ANSWER, content_type="text/plain; charset=utf-8")
        return redirect("unsubscribe", self.token)


@method_decorator(csrf_exempt, name="dispatch")
class ResubscribeView(_LinkView):
    def post(self, request: HttpRequest) -> HttpResponse:
        found = self.unsubscription
        suppression_resubscribe(account_id=found.account_id, email=found.email, topic=found.topic)
        return redirect("unsubscribe", self.token)


def _page(request: HttpRequest, unsubscription: Unsubscription, token: str) -> HttpResponse:
    """The page as the list stands: the Unsubscribe button, or once unsubscribed the Resubscribe one."""
    domain = sending_domain_name(account_id=unsubscription.account_id)
    if domain is None:  # the account was erased: nothing is sent for it any more
        return render(request, TEMPLATE, {"valid": False}, status=404)
    entry = suppression_entry(
        account_id=unsubscription.account_id, email=unsubscription.email, topic=unsubscription.topic
    )
    context = {
        "valid": True,
        "token": token,
        "domain": domain,
        "topic": unsubscription.topic,
        "address": masked_address(unsubscription.email),
        "unsubscribed": entry is not None,
        # Only the recipient's own unsubscribe is theirs to undo: never an entry the sender added.
        "resubscribable": entry is not None and entry.reason == SuppressionReason.UNSUBSCRIBED,
    }
    return render(request, TEMPLATE, context)
