from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from accounts.selectors import usage_get
from accounts.services import account_set_monthly_limit, account_set_rate_limit, rate_limit_described
from core.errors import InvalidRequest

# `--rate plan`: back to the plan's rate limit.
PLAN_RATE_ARGUMENT = "plan"
GIVE_A_LIMIT = "Give either a limit N or --plan-default"
GIVE_SOMETHING = f"{GIVE_A_LIMIT}, or --rate N or --rate {PLAN_RATE_ARGUMENT}"


class Command(BaseCommand):
    help = (
        "Give an account its own monthly limit in place of its plan's quota, or (--plan-default) take it away; "
        "with --rate, its own rate limit in place of its plan's, or (--rate plan) take that away."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("limit", nargs="?", type=int, help="notifications a billing cycle, 1 or more")
        parser.add_argument("--plan-default", action="store_true", help="go back to the plan's monthly quota")
        parser.add_argument(
            "--rate",
            metavar=f"N|{PLAN_RATE_ARGUMENT}",
            help=f"requests a minute per API key, 1 to 1,000,000; '{PLAN_RATE_ARGUMENT}' goes back to the plan's",
        )

    def handle(
        self, *args: Any, email: str, limit: int | None, plan_default: bool, rate: str | None, **options: Any
    ) -> None:
        monthly = limit is not None or plan_default
        if limit is not None and plan_default:
            raise CommandError(GIVE_A_LIMIT)
        if not monthly and rate is None:
            raise CommandError(GIVE_SOMETHING)
        rate_limit = None if rate is None else self._rate_argument(rate)
        account = account_or_error(email)
        changed: list[str] = []
        # Both limits or neither: a refused rate leaves the monthly limit as it was.
        try:
            with transaction.atomic():
                if monthly:
                    changed.append(self._set_monthly_limit(account, email, limit))
                if rate is not None:
                    changed.append(self._set_rate_limit(account, email, rate_limit))
        except InvalidRequest as error:
            raise CommandError(error.message) from None
        self.stdout.write("\n".join(changed))

    def _set_monthly_limit(self, account: Account, email: str, limit: int | None) -> str:
        before = self._describe_monthly(account)
        account_set_monthly_limit(account=account, limit=limit)
        usage = usage_get(account=account)
        return (
            f"Monthly limit of {email}: {self._describe_monthly(account)} (was {before}). "
            f"Used this cycle: {usage.used:,} of {usage.limit:,}."
        )

    def _set_rate_limit(self, account: Account, email: str, rate: int | None) -> str:
        before = self._describe_rate(account)
        account_set_rate_limit(account=account, rate=rate)
        return f"Rate limit of {email}: {self._describe_rate(account)} (was {before}), per API key."

    @staticmethod
    def _rate_argument(value: str) -> int | None:
        """--rate's requests a minute, or None for `plan`."""
        if value == PLAN_RATE_ARGUMENT:
            return None
        try:
            return int(value)
        except ValueError:
            raise CommandError(
                f"--rate takes a number of requests a minute or '{PLAN_RATE_ARGUMENT}', not '{value}'"
            ) from None

    @staticmethod
    def _describe_monthly(account: Account) -> str:
        if account.monthly_limit is None:
            return f"{account.limits.monthly_quota:,}, the {account.get_plan_display()} plan's quota"
        return f"{account.monthly_limit:,}, set for this account"

    @staticmethod
    def _describe_rate(account: Account) -> str:
        described = rate_limit_described(account.limits.requests_per_minute)
        if account.rate_limit is None:
            return f"{described}, the {account.get_plan_display()} plan's rate"
        return f"{described}, set for this account"
