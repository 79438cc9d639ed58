"""Staff's actions on an account as a whole, beyond what its holder can do."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from accounts.models import Account
from domains.selectors import domain_get
from domains.services import domain_delete
from notifications.models import DeliveryLog, Job
from staff.selectors import AccountContents, account_contents
from webhooks_inbound.models import EmailEvent

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Erased:
    email: str
    contents: AccountContents
    # Providers that could not remove the sending domain: staff remove it there by hand.
    warnings: list[dict[str, str]]


def account_erase(*, account: Account) -> Erased:
    """Removes the user, the account and everything of it, for good.

    The sending domain goes first, at every provider (network calls, outside any transaction);
    then the database part in one transaction, so it is all or nothing. Events and delivery logs
    are deleted by one statement each; Django's collector then deletes the jobs, the user and
    what cascades from the account.
    """
    contents = account_contents(account=account)
    email = account.user.email
    warnings = domain_delete(account=account) if domain_get(account=account) else []
    with transaction.atomic():
        EmailEvent.objects.filter(account=account).delete()
        DeliveryLog.objects.filter(job__account=account).delete()
        Job.objects.filter(account=account).only("id").delete()
        account.user.delete()
    logger.warning("Account %s (%s) erased for good: %s", account.pk, email, contents.as_dict())
    return Erased(email=email, contents=contents, warnings=warnings)
