from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.services import provider_key_remove, provider_key_set
from providers.names import ProviderName


class Command(BaseCommand):
    help = "Add, replace or remove an account's email provider key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["add", "remove"])
        parser.add_argument("provider", type=str.upper, choices=ProviderName.values)
        parser.add_argument("key", nargs="?", help="the provider API key (Postmark: the server token)")
        parser.add_argument("--priority", type=int, help="1 is tried first; default: after the others")
        parser.add_argument("--account-token", help="Postmark account token, for sender-domain operations")

    def handle(self, *args: Any, email: str, action: str, provider: str, key: str | None, **options: Any) -> None:
        account = account_or_error(email)
        if action == "remove":
            if not provider_key_remove(account=account, provider=provider):
                raise CommandError(f"{email} has no {provider} key")
            self.stdout.write(f"Removed the {provider} key of {email}.")
            return
        if not key:
            raise CommandError("add needs the provider API key")
        if options["priority"] is not None and options["priority"] < 1:
            raise CommandError("--priority must be 1 or more")
        saved = provider_key_set(
            account=account,
            provider=provider,
            api_key=key,
            priority=options["priority"],
            account_token=options["account_token"],
        )
        self.stdout.write(f"{provider} key saved for {email} (priority {saved.priority}).")
