"""The Django admin, staff's console, with its sign-in limited like every other (core.signin)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse

from core.signin import sign_in_refusal


class NotifyHubAdminSite(admin.AdminSite):
    site_header = site_title = "NotifyHub staff"

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method == "POST":
            refusal = sign_in_refusal(request, request.POST.get("username", ""), who="Staff")
            if refusal is not None:
                return refusal
        return super().login(request, extra_context)


class NotifyHubAdminConfig(AdminConfig):
    default_site = "core.admin.NotifyHubAdminSite"
