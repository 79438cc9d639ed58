from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.services import api_key_issue


class Command(BaseCommand):
    help = "Replace the account's first API key with a new one of its name and scope; print it as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")

    def handle(self, *args: Any, email: str, **options: Any) -> None:
        api_key = api_key_issue(account=account_or_error(email))
        self.stdout.write(f"Revoked the first key of {email}. New API key (shown once):")
        self.stdout.write(api_key)
