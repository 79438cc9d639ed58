from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.billing import us_date
from accounts.management.commands._account_args import account_or_error
from accounts.selectors import usage_get
from accounts.services import usage_reset


class Command(BaseCommand):
    help = "Put an account's usage of its current billing cycle back to 0."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")

    def handle(self, *args: Any, email: str, **options: Any) -> None:
        account = account_or_error(email)
        was = usage_reset(account=account)
        usage = usage_get(account=account)
        self.stdout.write(
            f"Usage of {email} in the cycle from {us_date(usage.period_start)}: {was:,} -> {usage.used:,} "
            f"of {usage.limit:,} (the cycle resets on {us_date(usage.resets_on)})."
        )
