"""The holder's email provider keys: add one (the provider checks it first), remove one, reorder them."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from accounts.selectors import configured_providers
from accounts.services import provider_key_move, provider_key_remove
from core.errors import DomainError, NotPermitted
from dashboard.forms import ProviderKeyForm
from dashboard.views.base import HolderView, no_store
from domains.models import SenderDomain
from domains.selectors import domain_get
from domains.services import provider_key_add_and_register
from notifications.routing import platform_sender
from providers.names import ProviderName

# The buttons' actions, as places moved in the order the keys are tried.
MOVES = {"move-up": -1, "move-down": 1}


class ProvidersView(HolderView, View):
    template_name = "dashboard/providers.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request, ProviderKeyForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        action = request.POST.get("action", "")
        if action == "add":
            return self._add(request)
        provider = request.POST.get("provider", "")
        if provider in ProviderName.values and action == "remove":
            self._remove(request, provider)
        elif provider in ProviderName.values and action in MOVES:
            self._move(request, provider, MOVES[action])
        return redirect("providers")

    def _add(self, request: HttpRequest) -> HttpResponse:
        form = ProviderKeyForm(request.POST)
        if not form.is_valid():
            return no_store(self._page(request, form, status=400))
        provider = form.cleaned_data["provider"]
        try:
            domain = provider_key_add_and_register(
                account=self.account,
                provider=provider,
                api_key=form.cleaned_data["api_key"],
                account_token=form.cleaned_data["account_token"],
            )
        except DomainError as error:
            # The form comes back saying why: 403 when the plan forbids keys, 400 as for any form not taken.
            form.add_error(None, error.message)
            return no_store(self._page(request, form, status=403 if isinstance(error, NotPermitted) else 400))
        level, message = added_message(ProviderName(provider).label, provider, domain)
        messages.add_message(request, level, message)
        return redirect("providers")

    def _remove(self, request: HttpRequest, provider: str) -> None:
        label = ProviderName(provider).label
        if not provider_key_remove(account=self.account, provider=provider):
            messages.info(request, f"There was no {label} key to remove.")
            return
        message = f"The {label} key is removed: your email no longer goes through {label}."
        if not configured_providers(account=self.account):
            message += " With no provider key left, email sends are refused until you add one."
        messages.success(request, message)

    def _move(self, request: HttpRequest, provider: str, offset: int) -> None:
        try:
            provider_key_move(account=self.account, provider=provider, offset=offset)
        except DomainError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, f"{ProviderName(provider).label} moved {'up' if offset < 0 else 'down'}.")

    def _page(self, request: HttpRequest, form: ProviderKeyForm, *, status: int = 200) -> HttpResponse:
        account = self.account
        context = {
            "account": account,
            "is_paid": account.limits.is_paid,
            "keys": account.provider_keys.all(),  # in the order they are tried (ProviderKey.Meta.ordering)
            "domain": domain_get(account=account),
            "platform_sender": platform_sender(),
            "form": form,
        }
        return render(request, self.template_name, context, status=status)


def added_message(label: str, provider: str, domain: SenderDomain | None) -> tuple[int, str]:
    """What saving the key did, the sending domain included: a message level and its words."""
    saved = f"{label} accepted the key and it is saved."
    if domain is None:
        return messages.SUCCESS, saved
    registration = next((r for r in domain.registrations.all() if r.provider == provider), None)
    if registration is None:
        reason = next((w["reason"] for w in domain.warnings if w["provider"] == provider), "")
        return messages.WARNING, f"{saved} {label} takes no part in your domain {domain.name}: {reason}."
    if registration.verified:
        return messages.SUCCESS, f"{saved} {label} already confirms your domain {domain.name}."
    return messages.WARNING, (
        f"{saved} Your domain {domain.name} is now registered with {label} too, and is pending until {label} "
        "confirms it: add its DNS records on the Domain page, then verify. Until then, email sends are refused."
    )
