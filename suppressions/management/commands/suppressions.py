"""``manage.py suppressions``: an account's suppression list at the shell (docs/operations.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.models import Account
from core.api.envelope import iso_utc
from core.api.fields import EmailAddressField, TopicField
from core.api.serializers import RequestSerializer
from core.errors import AddressSuppressed, SuppressionNotFound
from suppressions.models import Suppression
from suppressions.selectors import normalized_address, suppression_batches
from suppressions.services import suppression_add, suppression_remove

# Rows a query of `list` reads: an account may hold a million, and the list never holds more than this.
BATCH_SIZE = 1000
NONE = "-"


class AddressInput(RequestSerializer):
    # The API's own body field: an address it refuses is refused here in the same words.
    email = EmailAddressField()


class TopicInput(RequestSerializer):
    # The API's own field, as for the address.
    topic = TopicField(required=False)


class Command(BaseCommand):
    help = (
        "List an account's suppressed addresses, newest first (address, reason, provider, job id, added at, topic; "
        "tab-separated; a topic of '-': every email), or add one by hand (MANUAL) or remove one, for every email or "
        "with --topic for that topic's emails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["list", "add", "remove"])
        parser.add_argument("address", nargs="?", help="with 'add' and 'remove': the address")
        parser.add_argument("--topic", help="with 'add' and 'remove': the topic (without it: every email)")

    def handle(
        self, *args: Any, email: str, action: str, address: str | None, topic: str | None, **options: Any
    ) -> None:
        account = account_or_error(email)
        if action == "list":
            if address is not None:
                raise CommandError("'list' takes no address")
            if topic is not None:
                raise CommandError("'list' takes no topic")
            self._list(account, email)
            return
        if not address:
            raise CommandError(f"'{action}' needs the address")
        if action == "add":
            self._add(account, email, valid_address(address), valid_topic(topic))
        else:
            self._remove(account, email, address, valid_topic(topic))

    def _list(self, account: Account, email: str) -> None:
        listed = 0
        for batch in suppression_batches(account=account, batch_size=BATCH_SIZE):
            self.stdout.write("\n".join(map(listing_line, batch)))
            listed += len(batch)
        self.stdout.write(f"{listed:,} suppressed address(es) for {email}.")

    def _add(self, account: Account, email: str, address: str, topic: str | None) -> None:
        try:
            suppression = suppression_add(account=account, email=address, topic=topic)
        except AddressSuppressed as error:
            raise CommandError(error.message) from None
        stopped = "no email of the account goes to it" if topic is None else f"no email of topic {topic} goes to it"
        self.stdout.write(f"Suppressed {suppression.email} for {email} (MANUAL): {stopped}.")

    def _remove(self, account: Account, email: str, address: str, topic: str | None) -> None:
        # The address is not validated: an event may have put on the list an address the API would refuse, and it
        # must come off.
        try:
            suppression_remove(account=account, email=address, topic=topic)
        except SuppressionNotFound as error:
            raise CommandError(error.message) from None
        removed = normalized_address(address) if topic is None else f"{normalized_address(address)} (topic {topic})"
        self.stdout.write(f"Removed {removed} from the suppression list of {email}: the account may email it again.")


def valid_address(address: str) -> str:
    given = AddressInput(data={"email": address})
    if not given.is_valid():
        raise CommandError(given.errors["email"][0])
    return str(given.validated_data["email"])


def valid_topic(topic: str | None) -> str | None:
    if topic is None:
        return None
    given = TopicInput(data={"topic": topic})
    if not given.is_valid():
        raise CommandError(given.errors["topic"][0])
    return str(given.validated_data["topic"])


def listing_line(suppression: Suppression) -> str:
    job_id = str(suppression.job_id) if suppression.job_id else NONE
    fields = [
        suppression.email,
        suppression.reason,
        suppression.provider or NONE,
        job_id,
        iso_utc(suppression.created_at),
        suppression.topic or NONE,
    ]
    return "\t".join(fields)
