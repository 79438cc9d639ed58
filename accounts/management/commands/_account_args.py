from __future__ import annotations

from django.core.management.base import CommandError

from accounts.models import Account
from accounts.plans import Plan
from accounts.selectors import account_get_by_email

PLAN_CHOICES = [plan.value for plan in Plan]


def account_or_error(email: str) -> Account:
    account = account_get_by_email(email=email)
    if account is None:
        raise CommandError(f"No account for {email}")
    return account
