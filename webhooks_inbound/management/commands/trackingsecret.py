from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from core.errors import InvalidRequest
from providers.names import ProviderName
from webhooks_inbound.selectors import receiver_urls
from webhooks_inbound.services import SETTABLE_PROVIDERS, postmark_password_generate, tracking_credential_set


class Command(BaseCommand):
    help = (
        "Set up an account's provider events: 'generate' makes a new Postmark Basic Auth password (the last line); "
        "'set sendgrid KEY' stores SendGrid's verification key, 'set resend SECRET' Resend's signing secret."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["generate", "set"])
        parser.add_argument("provider", nargs="?", choices=SETTABLE_PROVIDERS, help="with 'set'")
        parser.add_argument("value", nargs="?", help="with 'set': the key or secret the provider shows")

    def handle(
        self, *args: Any, email: str, action: str, provider: str | None, value: str | None, **options: Any
    ) -> None:
        account = account_or_error(email)
        if action == "generate":
            if provider or value:
                raise CommandError("'generate' takes no provider or value")
            password = postmark_password_generate(account=account)
            self._print_urls(account)
            self.stdout.write("In Postmark, give the webhook these Basic Auth credentials (any user name).")
            self.stdout.write(
                f"Postmark Basic Auth password of {email} (shown once; the previous one stops working now):"
            )
            self.stdout.write(password)
            return
        if not provider or not value:
            raise CommandError("'set' takes a provider (sendgrid or resend) and its key or secret")
        try:
            tracking_credential_set(account=account, provider=provider, value=value)
        except InvalidRequest as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"Stored the {provider} credential of {email}.")
        self._print_urls(account)

    def _print_urls(self, account: Account) -> None:
        for provider, url in receiver_urls(account=account).items():
            self.stdout.write(f"{ProviderName(provider).label:<9} {url}")
