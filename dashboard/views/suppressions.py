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
from suppressions.selectors import normalized_address, suppression_list
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
                suppression = suppression_add(account=self.account, email=form.cleaned_data["email"])
            except DomainError as error:  # already on the list, by hand or by a provider's event
                form.add_error("email", error.message)
            else:
                messages.success(
                    request, f"{suppression.email} is on the suppression list: emails to it now fail at once."
                )
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
        )
        return {
            "rows": [_row(suppression) for suppression in suppressions],
            "total": total,
            "filtered": bool(cleaned["q"] or cleaned["reason"]),
            **numbered_pages(query, page=page, per_page=SUPPRESSIONS_PER_PAGE, total=total),
        }


class SuppressionRemoveView(HolderView, View):
    """GET asks to confirm, POST removes: the question is a page of its own, so it needs no script."""

    def get(self, request: HttpRequest) -> HttpResponse:
        found, _ = suppression_list(account=self.account, page=1, limit=1, email=request.GET.get("email", ""))
        if not found:
            # Never on this account's list (another account's address too), or removed since the list was shown.
            messages.error(request, SuppressionNotFound.message)
            return redirect("suppressions")
        return render(request, TEMPLATE, {"removing": _row(found[0])})

    def post(self, request: HttpRequest) -> HttpResponse:
        email = request.POST.get("email", "")
        try:
            suppression_remove(account=self.account, email=email)
        except DomainError as error:
            messages.error(request, error.message)
        else:
            messages.success(
                request, f"{normalized_address(email)} is off the suppression list: emails to it are sent again."
            )
        return redirect("suppressions")
