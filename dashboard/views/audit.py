"""The account's audit log: what changed, who changed it, from where and when, newest first (docs/rules.md,
"Audit log")."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View

from accounts.selectors import audit_list
from dashboard.forms import PageForm
from dashboard.views.base import HolderView
from dashboard.views.paging import numbered_pages

AUDIT_ENTRIES_PER_PAGE = 25


class AuditView(HolderView, View):
    template_name = "dashboard/audit.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        form = PageForm(request.GET)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form, "entries": [], "page": 1}, status=400)
        page = form.cleaned_data["page"] or 1
        entries, total = audit_list(account=self.account, page=page, limit=AUDIT_ENTRIES_PER_PAGE)
        pager = numbered_pages(request.GET, page=page, per_page=AUDIT_ENTRIES_PER_PAGE, total=total)
        return render(request, self.template_name, {"form": form, "entries": entries, "total": total, **pager})
