from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email

from accounts.management.commands._account_args import PLAN_CHOICES
from accounts.services import account_create


class Command(BaseCommand):
    help = "Create a user and account; prints the API key, alone, as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("--plan", choices=PLAN_CHOICES, default="free")
        parser.add_argument("--password", help="lets the user sign in to the dashboard")

    def handle(self, *args: Any, email: str, plan: str, password: str | None, **options: Any) -> None:
        try:
            validate_email(email)
        except ValidationError:
            raise CommandError(f"{email} is not an email address") from None
        if get_user_model().objects.filter(username__iexact=email).exists():
            raise CommandError(f"An account for {email} already exists")
        account, api_key = account_create(email=email, plan=plan, password=password)
        self.stdout.write(f"Created {account.get_plan_display()} account for {email}.")
        self.stdout.write("API key (shown once, store it now):")
        self.stdout.write(api_key)
