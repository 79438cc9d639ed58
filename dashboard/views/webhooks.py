"""The webhook signing secret and the providers' event tracking credentials."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from accounts.selectors import signing_secret_exists
from accounts.services import signing_secret_delete, signing_secret_generate
from core.errors import DomainError
from dashboard.views.base import HolderView, no_store
from webhooks_inbound.selectors import receiver_urls, tracking_credentials_of
from webhooks_inbound.services import postmark_password_generate, tracking_credential_set


class WebhooksView(HolderView, View):
    template_name = "dashboard/webhooks.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        action = request.POST.get("action", "")
        account = self.account
        if action in ("generate-signing-secret", "rotate-signing-secret"):
            return no_store(self._page(request, new_signing_secret=signing_secret_generate(account=account)))
        if action == "delete-signing-secret":
            signing_secret_delete(account=account)
            messages.success(request, "The signing secret is deleted; webhooks now go out unsigned.")
        elif action == "generate-postmark-password":
            return no_store(self._page(request, new_postmark_password=postmark_password_generate(account=account)))
        elif action in ("set-sendgrid-key", "set-resend-secret"):
            return self._set_tracking_credential(request, action)
        return redirect("webhooks")

    def _set_tracking_credential(self, request: HttpRequest, action: str) -> HttpResponse:
        value = request.POST.get("value", "")
        provider = "sendgrid" if action == "set-sendgrid-key" else "resend"
        try:
            tracking_credential_set(account=self.account, provider=provider, value=value)
        except DomainError as error:
            return self._page(request, errors={provider: error.message}, values={provider: value}, status=400)
        messages.success(request, "Saved. Events signed with it are accepted from now on.")
        return redirect("webhooks")

    def _page(self, request: HttpRequest, *, status: int = 200, **extra: object) -> HttpResponse:
        account = self.account
        credentials = tracking_credentials_of(account)
        context = {
            "has_signing_secret": signing_secret_exists(account=account),
            "receiver_urls": receiver_urls(account=account),
            "tracking": credentials,
            "errors": {},
            "values": {},
            **extra,
        }
        return render(request, self.template_name, context, status=status)
