"""The suppression list: the addresses no email of the account goes to, searched, added by hand and removed."""

from __future__ import annotations

from typing import Any, NamedTuple

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views import View

from core.errors import DomainError, SuppressionNotFound
from dashboard.forms import SUPPRESSION_REASONS, SuppressionAddForm, SuppressionFilterForm
from dashboard.views.base import HolderView
from dashboard.views.paging import numbered_pages
from suppressions.models import Suppression
from suppressions.selectors import normalized_address, suppression_entry, suppression_list
from suppressions.services import suppression_add, suppression_remove

SUPPRESSIONS_PER_PAGE = 25
REASON_WORDS = dict(SUPPRESSION_REASONS)
TEMPLATE = "dashboard/suppressions.html"


class Row(NamedTuple):
    suppression: Suppression
    reason: str


def _row(suppression: Suppression) -> Row:
    return Row(suppression, REASON_WORDS[suppression.reason])


class SuppressionsView(HolderView, View):
    """The list, searched and paged by GET; adding posts back here and, once done, redirects."""

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        form = SuppressionAddForm(request.POST)
        if form.is_valid():
            try:
                suppression = suppression_add(
                    account=self.account, email=form.cleaned_data["email"], topic=form.cleaned_data["topic"] or None
                )
            except DomainError as error:  # already on the list, by hand or by a provider's event
                form.add_error("email", error.message)
            else:
                added = f"{_entry_words(suppression)} is on the suppression list"
                messages.success(request, f"{added}: {_emails_to(suppression)} now fail at once.")
                return redirect("suppressions")
        return self._page(request, add_form=form, status=400)

    def _page(
        self, request: HttpRequest, *, add_form: SuppressionAddForm | None = None, status: int = 200
    ) -> HttpResponse:
        filters = SuppressionFilterForm(request.GET)
        context: dict[str, Any] = {"filters": filters, "add_form": add_form or SuppressionAddForm()}
        if filters.is_valid():
            context.update(self._listing(request.GET, filters.cleaned_data))
        else:
            context.update(rows=[], page=1, filtered=True)
            status = 400
        return render(request, TEMPLATE, context, status=status)

    def _listing(self, query: QueryDict, cleaned: dict[str, Any]) -> dict[str, Any]:
        page = cleaned["page"] or 1
        suppressions, total = suppression_list(
            account=self.account,
            page=page,
            limit=SUPPRESSIONS_PER_PAGE,
            containing=cleaned["q"] or None,
            reason=cleaned["reason"] or None,
            topic=cleaned["topic"] or None,
        )
        return {
            "rows": [_row(suppression) for suppression in suppressions],
            "total": total,
            "filtered": bool(cleaned["q"] or cleaned["reason"] or cleaned["topic"]),
            **numbered_pages(query, page=page, per_page=SUPPRESSIONS_PER_PAGE, total=total),
        }


class SuppressionRemoveView(HolderView, View):
    """GET asks to confirm, POST removes: the question is a page of its own, so it needs no script."""

    def get(self, request: HttpRequest) -> HttpResponse:
        found = suppression_entry(
            account_id=self.account.pk, email=request.GET.get("email", ""), topic=request.GET.get("topic") or None
        )
        if found is None:
            # Never on this account's list (another account's address too), or removed since the list was shown.
            messages.error(request, SuppressionNotFound.message)
            return redirect("suppressions")
        return render(request, TEMPLATE, {"removing": _row(found)})

    def post(self, request: HttpRequest) -> HttpResponse:
        email, topic = request.POST.get("email", ""), request.POST.get("topic") or None
        try:
            suppression_remove(account=self.account, email=email, topic=topic)
        except DomainError as error:
            messages.error(request, error.message)
        else:
            removed = Suppression(email=normalized_address(email), topic=topic)
            removed_words = f"{_entry_words(removed)} is off the suppression list"
            messages.success(request, f"{removed_words}: {_emails_to(removed)} are sent again.")
        return redirect("suppressions")


def _entry_words(suppression: Suppression) -> str:
    """The entry as the page's messages name it: the address, and its topic when it has one."""
    if suppression.topic is None:
        return suppression.email
    return f"{suppression.email} (topic {suppression.topic})"


def _emails_to(suppression: Suppression) -> str:
    """Which emails the entry stops, as the page's messages say it."""
    return "emails to it" if suppression.topic is None else "emails to it on this topic"
