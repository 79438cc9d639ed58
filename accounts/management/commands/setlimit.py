from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from accounts.selectors import usage_get
from accounts.services import account_set_monthly_limit
from core.errors import InvalidRequest


class Command(BaseCommand):
    help = "Give an account its own monthly limit in place of its plan's quota, or (--plan-default) take it away."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("limit", nargs="?", type=int, help="notifications a billing cycle, 1 or more")
        parser.add_argument("--plan-default", action="store_true", help="go back to the plan's monthly quota")

    def handle(self, *args: Any, email: str, limit: int | None, plan_default: bool, **options: Any) -> None:
        if (limit is not None) == plan_default:  # both, or neither
            raise CommandError("Give either a limit N or --plan-default")
        account = account_or_error(email)
        before = self._describe(account)
        try:
            account_set_monthly_limit(account=account, limit=limit)
        except InvalidRequest as error:
            raise CommandError(error.message) from None
        usage = usage_get(account=account)
        self.stdout.write(
            f"Monthly limit of {email}: {self._describe(account)} (was {before}). "
            f"Used this cycle: {usage.used:,} of {usage.limit:,}."
        )

    @staticmethod
    def _describe(account: Account) -> str:
        if account.monthly_limit is None:
            return f"{account.limits.monthly_quota:,}, the {account.get_plan_display()} plan's quota"
        return f"{account.monthly_limit:,}, set for this account"
