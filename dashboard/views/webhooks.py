"""The webhook signing secret, a test webhook, and the providers' event tracking credentials."""

from __future__ import annotations

from typing import Literal

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View
from django_ratelimit.core import get_usage

from accounts.models import Account
from accounts.selectors import previous_secret_signs_until, signing_secret_exists
from accounts.services import signing_secret_delete, signing_secret_generate
from core.errors import DomainError
from dashboard.forms import WebhookTestForm
from dashboard.views.base import HolderView, no_store
from notifications.services import webhook_test_send
from webhooks_inbound.selectors import receiver_urls, tracking_credentials_of
from webhooks_inbound.services import postmark_password_generate, tracking_credential_set

TESTS_PER_MINUTE = 10


def over_test_limit(request: HttpRequest, account: Account, *, kind: Literal["webhook", "email"]) -> str | None:
    """Counts this test of ``kind``: a webhook (the webhooks and the events pages share one count) or an email (the
    templates' page); why it is refused once the account has sent TESTS_PER_MINUTE of that kind in the current
    minute, else None."""
    usage = get_usage(
        request,
        group=f"test-{kind}",
        key=lambda group, request: str(account.public_id),
        rate=f"{TESTS_PER_MINUTE}/m",
        increment=True,
    )
    if not (usage and usage["should_limit"]):
        return None
    return f"You have sent {TESTS_PER_MINUTE} test {kind}s this minute. Try again in {int(usage['time_left'])} seconds."


class WebhooksView(HolderView, View):
    template_name = "dashboard/webhooks.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        try:
            return self._act(request, request.POST.get("action", ""))
        except DomainError as error:  # e.g. an unconfirmed account, which keeps no secrets
            messages.error(request, error.message)
            return redirect("webhooks")

    def _act(self, request: HttpRequest, action: str) -> HttpResponse:
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
        elif action == "send-test-webhook":
            return self._send_test_webhook(request)
        return redirect("webhooks")

    def _send_test_webhook(self, request: HttpRequest) -> HttpResponse:
        form = WebhookTestForm(request.POST)
        if not form.is_valid():
            return self._page(request, test_form=form, status=400)
        if refusal := over_test_limit(request, self.account, kind="webhook"):
            form.add_error(None, refusal)
            return self._page(request, test_form=form, status=429)
        try:
            result = webhook_test_send(account=self.account, url=form.cleaned_data["url"])
        except DomainError as error:
            form.add_error("url", error.message)
            return self._page(request, test_form=form, status=400)
        return self._page(request, test_form=form, test_result=result)

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
            "previous_secret_signs_until": previous_secret_signs_until(account=account),
            "receiver_urls": receiver_urls(account=account),
            "tracking": credentials,
            "errors": {},
            "values": {},
            "test_form": WebhookTestForm(),
            "tests_per_minute": TESTS_PER_MINUTE,
            **extra,
        }
        return render(request, self.template_name, context, status=status)
