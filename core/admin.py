"""The Django admin, staff's console, with its sign-in limited like every other (core.signin)."""

from __future__ import annotations

import logging
import math
from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.signin import seconds_until_sign_in_allowed

logger = logging.getLogger(__name__)


class NotifyHubAdminSite(admin.AdminSite):
    site_header = site_title = "NotifyHub staff"

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method == "POST":
            username = request.POST.get("username", "")
            wait = seconds_until_sign_in_allowed(request, username)
            if wait:
                logger.warning(
                    "Staff sign-in refused for %r from %s: too many wrong passwords",
                    username,
                    request.META.get("REMOTE_ADDR"),
                )
                context = {"minutes": math.ceil(wait / 60), "retry_url": request.get_full_path()}
                return render(request, "sign_in_limited.html", context, status=429)
        return super().login(request, extra_context)


class NotifyHubAdminConfig(AdminConfig):
    default_site = "core.admin.NotifyHubAdminSite"
