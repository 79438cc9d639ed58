"""Endpoint health: how the account's webhooks to each destination have fared (docs/event-endpoints.md)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views import View

from dashboard.forms import PageForm
from dashboard.views.base import HolderView
from dashboard.views.paging import numbered_pages
from notifications.selectors import destination_states

DESTINATIONS_PER_PAGE = 25


class EndpointsView(HolderView, View):
    template_name = "dashboard/endpoints.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        context = {"threshold": settings.ENDPOINT_FAILING_THRESHOLD}
        form = PageForm(request.GET)
        if not form.is_valid():
            return render(request, self.template_name, {**context, "form": form, "states": [], "page": 1}, status=400)
        page = form.cleaned_data["page"] or 1
        states, total = destination_states(
            account=self.account, now=timezone.now(), page=page, limit=DESTINATIONS_PER_PAGE
        )
        pager = numbered_pages(request.GET, page=page, per_page=DESTINATIONS_PER_PAGE, total=total)
        return render(request, self.template_name, {**context, "states": states, "total": total, **pager})
