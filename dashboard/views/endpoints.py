"""Endpoint health: how the account's webhooks to each destination have fared (docs/event-endpoints.md)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views import View

from dashboard.views.base import HolderView
from notifications.selectors import destination_states


class EndpointsView(HolderView, View):
    def get(self, request: HttpRequest) -> HttpResponse:
        states = destination_states(account=self.account, now=timezone.now())
        context = {"states": states, "threshold": settings.ENDPOINT_FAILING_THRESHOLD}
        return render(request, "dashboard/endpoints.html", context)
