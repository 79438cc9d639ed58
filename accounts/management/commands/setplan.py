from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.commands._account_args import PLAN_CHOICES, account_or_error
from accounts.services import account_set_plan


class Command(BaseCommand):
    help = "Move an account to another plan; its billing cycle restarts today."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("plan", choices=PLAN_CHOICES)

    def handle(self, *args: Any, email: str, plan: str, **options: Any) -> None:
        account = account_set_plan(account=account_or_error(email), plan=plan)
        self.stdout.write(f"{email} is now on the {account.get_plan_display()} plan.")
