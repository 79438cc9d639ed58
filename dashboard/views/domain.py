"""The sending domain: request it, add its DNS records, verify it, delete it."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from accounts.selectors import configured_providers
from core.errors import DomainError
from dashboard.forms import DomainDeleteForm, DomainRequestForm
from dashboard.views.base import HolderView
from domains.models import DomainStatus
from domains.selectors import domain_get
from domains.services import domain_delete, domain_request, domain_verify
from notifications.routing import platform_sender
from providers.names import ProviderName


def provider_label(name: str) -> str:
    return ProviderName(name).label


def labelled(warnings: list[dict[str, str]]) -> list[dict[str, str]]:
    """The services' warnings with each provider named as people write it (SendGrid, not SENDGRID)."""
    return [{**warning, "provider": provider_label(warning["provider"])} for warning in warnings]


class DomainView(HolderView, View):
    """Each action posts back here and, once done, redirects: reloading the page never repeats it."""

    template_name = "dashboard/domain.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        actions = {"request": self._request, "verify": self._verify, "delete": self._delete}
        action = actions.get(request.POST.get("action", ""))
        return action(request) if action else redirect("domain")

    def _request(self, request: HttpRequest) -> HttpResponse:
        form = DomainRequestForm(request.POST)
        if form.is_valid():
            try:
                domain = domain_request(account=self.account, name=form.cleaned_data["domain"])
            except DomainError as error:
                form.add_error(None, error.message)
            else:
                messages.success(
                    request, f"{domain.sending_name} is registered. Add the DNS records below, then verify it."
                )
                return redirect("domain")
        return self._page(request, request_form=form, status=400)

    def _verify(self, request: HttpRequest) -> HttpResponse:
        try:
            domain = domain_verify(account=self.account)
        except DomainError as error:
            messages.error(request, error.message)
        else:
            if domain.status == DomainStatus.VERIFIED:
                messages.success(request, f"{domain.name} is verified: your emails go out from {domain.sending_name}.")
            else:
                messages.warning(
                    request,
                    "Not verified yet: each provider's answer is below. "
                    "New DNS records can take a few hours to be seen; verify again later.",
                )
        return redirect("domain")

    def _delete(self, request: HttpRequest) -> HttpResponse:
        form = DomainDeleteForm(request.POST)
        if not form.is_valid():
            return self._page(request, delete_form=form, status=400)
        try:
            warnings = domain_delete(account=self.account)
        except DomainError as error:
            messages.error(request, error.message)
            return redirect("domain")
        messages.success(
            request, "Your sending domain is deleted. Emails on your plan are refused until a new one is verified."
        )
        for warning in labelled(warnings):
            messages.warning(
                request,
                f"{warning['provider']} could not remove it ({warning['reason']}); remove it in {warning['provider']} "
                "yourself.",
            )
        return redirect("domain")

    def _page(
        self,
        request: HttpRequest,
        *,
        request_form: DomainRequestForm | None = None,
        delete_form: DomainDeleteForm | None = None,
        status: int = 200,
    ) -> HttpResponse:
        account = self.account
        domain = domain_get(account=account)
        is_paid = account.limits.is_paid
        providers = [provider_label(name) for name in configured_providers(account=account)]
        context = {
            "account": account,
            "is_paid": is_paid,
            "providers": providers,
            "can_request": domain is None and is_paid and bool(providers),
            "domain": domain,
            "warnings": labelled(domain.warnings) if domain else [],
            "platform_sender": platform_sender(),
            "request_form": request_form or DomainRequestForm(),
            "delete_form": delete_form or DomainDeleteForm(),
        }
        return render(request, self.template_name, context, status=status)
