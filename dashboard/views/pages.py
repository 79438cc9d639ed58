"""The landing page, the dashboard's home, the API key and the account pages."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View
from django.views.generic import TemplateView

from accounts.selectors import active_api_key, configured_providers, usage_get
from accounts.services import account_delete, api_key_issue
from core.errors import DomainError
from dashboard.chart import outcome_chart
from dashboard.forms import ConfirmPasswordForm
from dashboard.views.base import HolderView, no_store
from domains.models import DomainStatus
from domains.selectors import domain_get
from notifications.routing import platform_sender
from notifications.selectors import daily_outcomes, job_page


def landing(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("dashboard")
    return render(request, "landing.html")


CHART_DAYS = 30
RECENT_JOBS = 5


class HomeView(HolderView, TemplateView):
    template_name = "dashboard/home.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        account = self.account
        usage = usage_get(account=account)
        recent_jobs, _ = job_page(account=account, page=1, limit=RECENT_JOBS)
        return {
            **super().get_context_data(**kwargs),
            "account": account,
            "usage": usage,
            "usage_percent": min(100, round(100 * usage.used / usage.limit)) if usage.limit else 0,
            "platform_sender": platform_sender(),
            "chart": outcome_chart(daily_outcomes(account=account, days=CHART_DAYS)),
            "recent_jobs": recent_jobs,
            "steps": self._next_steps(has_sent=bool(recent_jobs)),
        }

    def _next_steps(self, *, has_sent: bool) -> list[dict[str, Any]]:
        """What a holder does first, in order; each step says whether it is done."""
        account = self.account
        steps = [
            {"key": "confirm", "label": "Confirm your email address", "done": account.is_confirmed},
            {"key": "api-key", "label": "Create your API key", "done": active_api_key(account=account) is not None},
        ]
        if account.limits.is_paid:
            domain = domain_get(account=account)
            steps += [
                {
                    "key": "providers",
                    "label": "Add an email provider key",
                    "done": bool(configured_providers(account=account)),
                },
                {
                    "key": "domain",
                    "label": "Add and verify your sending domain",
                    "done": bool(domain and domain.status == DomainStatus.VERIFIED),
                },
            ]
        steps.append({"key": "send", "label": "Send your first notification", "done": has_sent})
        return steps


class ApiKeyView(HolderView, View):
    template_name = "dashboard/api_key.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        try:
            raw_key = api_key_issue(account=self.account)
        except DomainError as error:
            messages.error(request, error.message)
            return redirect("api-key")
        return no_store(self._page(request, new_key=raw_key))

    def _page(self, request: HttpRequest, new_key: str | None = None) -> HttpResponse:
        context = {"account": self.account, "key": active_api_key(account=self.account), "new_key": new_key}
        return render(request, self.template_name, context)


class AccountView(HolderView, TemplateView):
    template_name = "dashboard/account.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "account": self.account}


class AccountDeleteView(HolderView, View):
    """Deleting asks for the password again; the account is soft-deleted (staff can restore it)."""

    template_name = "dashboard/account_delete.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return render(request, self.template_name, {"form": ConfirmPasswordForm(user=request.user)})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ConfirmPasswordForm(request.POST, user=request.user)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        account_delete(account=self.account)
        logout(request)
        messages.success(request, "Your account is deleted. Its API key no longer works.")
        return redirect("landing")
