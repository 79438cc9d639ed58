from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account, KeyMode, KeyScope
from accounts.selectors import active_api_keys
from accounts.services import api_key_create, api_key_revoke
from core.errors import DomainError


def _when(moment: Any) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "never"


class Command(BaseCommand):
    help = (
        "An account's API keys (docs/rules.md, 'API keys and scopes'): create one (the key alone on the last line), "
        "list them (never a key), or revoke one by name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="issue a key and print it once")
        create.add_argument("--name", required=True)
        create.add_argument("--scope", choices=KeyScope.values, default=KeyScope.FULL)
        create.add_argument("--test", action="store_true", help="a test key: its sends go nowhere and spend nothing")
        actions.add_parser("list", help="the active keys: name, scope, first characters, created, last used, mode")
        revoke = actions.add_parser("revoke", help="stop a key at once")
        revoke.add_argument("name")

    def handle(self, *args: Any, email: str, action: str, **options: Any) -> None:
        account = account_or_error(email)
        try:
            if action == "create":
                mode = KeyMode.TEST if options["test"] else KeyMode.LIVE
                self._create(account, name=options["name"], scope=options["scope"], mode=mode)
            elif action == "list":
                self._list(account)
            else:
                api_key_revoke(account=account, name=options["name"])
                self.stdout.write(f"Revoked the API key {options['name']} of {email}.")
        except DomainError as error:
            raise CommandError(error.message) from None

    def _create(self, account: Account, *, name: str, scope: str, mode: str) -> None:
        raw_key = api_key_create(account=account, name=name, scope=scope, mode=mode)
        kind = f"{scope} test" if mode == KeyMode.TEST else scope
        self.stdout.write(f"Created the {kind} API key {name.strip()}. The key (shown once, store it now):")
        self.stdout.write(raw_key)

    def _list(self, account: Account) -> None:
        keys = list(active_api_keys(account=account))
        if not keys:
            self.stdout.write("No active API keys.")
        for key in keys:
            self.stdout.write(
                f"{key.name}\t{key.scope}\t{key.hint}…\tcreated {_when(key.created_at)}\t"
                f"last used {_when(key.last_used_at)}\t{key.mode}"
            )
