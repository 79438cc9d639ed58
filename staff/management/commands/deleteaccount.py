from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from accounts.services import account_delete
from staff.selectors import account_contents
from staff.services import account_erase


class Command(BaseCommand):
    help = (
        "Soft-delete an account (its API key answers 403; staff can restore it), "
        "or with --permanent remove the user and everything of the account for good."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument(
            "--permanent", action="store_true", help="delete for good: jobs, logs, events, keys, the domain"
        )
        parser.add_argument(
            "--no-input", action="store_false", dest="interactive", help="do not ask to type the email to confirm"
        )

    def handle(self, *args: Any, email: str, permanent: bool, interactive: bool, **options: Any) -> None:
        account = account_or_error(email)
        if not permanent:
            if account.deleted_at is not None:
                raise CommandError(f"{email} is deleted already; add --permanent to remove it for good")
            account_delete(account=account)
            self.stdout.write(f"{email} is deleted: its API key answers 403. Staff can restore it in the admin.")
            return
        if interactive:
            self._confirm(account, email)
        erased = account_erase(account=account)
        self.stdout.write(f"{email} is gone for good. Deleted: {erased.contents.summary()}.")
        for warning in erased.warnings:
            self.stderr.write(f"{warning['provider']} kept the sending domain ({warning['reason']}): remove it there.")

    def _confirm(self, account: Account, email: str) -> None:
        self.stdout.write(f"This removes {email} for good: {account_contents(account=account).summary()}.")
        if input("Type the email address to confirm: ").strip().lower() != email.strip().lower():
            raise CommandError("Not confirmed; nothing was deleted")
