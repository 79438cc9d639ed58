from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.selectors import previous_secret_signs_until, signing_secret_exists
from accounts.services import signing_secret_delete, signing_secret_generate
from core.api.envelope import iso_utc


class Command(BaseCommand):
    help = "Generate, rotate or delete an account's webhook signing secret; a new secret is the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["generate", "rotate", "delete"])

    def handle(self, *args: Any, email: str, action: str, **options: Any) -> None:
        account = account_or_error(email)
        has_secret = signing_secret_exists(account=account)
        if action == "delete":
            if not signing_secret_delete(account=account):
                raise CommandError(f"{email} has no signing secret")
            self.stdout.write(f"Deleted the signing secret of {email}; webhooks go out unsigned.")
            return
        if action == "generate" and has_secret:
            raise CommandError(f"{email} already has a signing secret; use 'rotate' to replace it")
        if action == "rotate" and not has_secret:
            raise CommandError(f"{email} has no signing secret; use 'generate'")
        secret = signing_secret_generate(account=account)
        until = previous_secret_signs_until(account=account)
        previous = (
            f"the previous one also signs every delivery until {iso_utc(until)}"
            if until
            else "the previous one, if any, stops signing now"
        )
        self.stdout.write(f"Signing secret of {email} (shown once; {previous}):")
        self.stdout.write(secret)
