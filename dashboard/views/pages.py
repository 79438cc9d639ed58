"""The landing page, the dashboard's home, the API keys and the account pages."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View
from django.views.generic import TemplateView

from accounts.models import DEFAULT_KEY_NAME, MAX_ACTIVE_API_KEYS, KeyMode, KeyScope
from accounts.selectors import active_api_key, active_api_keys, configured_providers, usage_get
from accounts.services import account_delete, account_set_product_name, api_key_create, api_key_revoke
from core.errors import DomainError, NotPermitted
from dashboard.chart import outcome_chart
from dashboard.forms import ApiKeyCreateForm, ConfirmPasswordForm, ProductNameForm
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
    """The account's API keys: the active ones, each revoked from its row, and the form creating one, whose answer
    shows the new key once. The first key's form comes named ``Default``."""

    template_name = "dashboard/api_key.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        action = request.POST.get("action", "")
        if action == "create":
            return self._create(request)
        if action == "revoke":
            self._revoke(request, request.POST.get("name", ""))
        return redirect("api-key")

    def _create(self, request: HttpRequest) -> HttpResponse:
        form = ApiKeyCreateForm(request.POST)
        if not form.is_valid():
            return self._page(request, form=form, status=400)
        name, scope, mode = (form.cleaned_data[field] for field in ("name", "scope", "mode"))
        try:
            raw_key = api_key_create(account=self.account, name=name, scope=scope, mode=mode)
        except DomainError as error:  # unconfirmed, the name taken or refused, MAX_ACTIVE_API_KEYS already
            status = 403 if isinstance(error, NotPermitted) else 400
            return self._page(request, form=form, error=error.message, status=status)
        # The POST's own answer: the key exists nowhere to show it from after this.
        new_key = {"key": raw_key, "name": name, "scope": KeyScope(scope).label, "mode": KeyMode(mode).label}
        return no_store(self._page(request, new_key=new_key))

    def _revoke(self, request: HttpRequest, name: str) -> None:
        try:
            api_key_revoke(account=self.account, name=name)
        except DomainError as error:  # no active key of that name in this account
            messages.error(request, error.message)
        else:
            messages.success(request, f"Revoked the API key {name}.")

    def _page(
        self,
        request: HttpRequest,
        *,
        form: ApiKeyCreateForm | None = None,
        error: str | None = None,
        new_key: dict[str, str] | None = None,
        status: int = 200,
    ) -> HttpResponse:
        keys = list(active_api_keys(account=self.account))
        if form is None:
            # The first key comes named as the one an operator's account starts with; the holder may rename it.
            form = ApiKeyCreateForm(initial={} if keys else {"name": DEFAULT_KEY_NAME})
        context = {
            "account": self.account,
            "keys": keys,
            "max_keys": MAX_ACTIVE_API_KEYS,
            "form": form,
            "error": error,
            "new_key": new_key,
        }
        return render(request, self.template_name, context, status=status)


class AccountView(HolderView, View):
    """The account's facts, and the product name its customers see on the consumer portal, saved by POST."""

    template_name = "dashboard/account.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        form = ProductNameForm(initial={"product_name": self.account.product_name})
        return render(request, self.template_name, {"account": self.account, "form": form})

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ProductNameForm(request.POST)
        if not form.is_valid():
            return render(request, self.template_name, {"account": self.account, "form": form}, status=400)
        account_set_product_name(account=self.account, product_name=form.cleaned_data["product_name"])
        messages.success(request, "Product name saved: the consumer portal's pages show it.")
        return redirect("account")


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
        messages.success(request, "Your account is deleted. Its API keys no longer work.")
        return redirect("landing")
