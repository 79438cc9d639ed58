"""``manage.py eventendpoints``: an account's event endpoints at the shell (docs/operations.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count, Q

from accounts.management.commands._account_args import account_or_error
from core.api.envelope import iso_utc
from core.errors import EventEndpointNotFound
from event_endpoints.models import EventDeliveryStatus, EventEndpoint
from event_endpoints.queue import UNFINISHED
from event_endpoints.selectors import endpoint_get
from event_endpoints.services import endpoint_delete


class Command(BaseCommand):
    help = (
        "List an account's event endpoints, oldest first (id, URL, event types, added at, deliveries waiting and "
        "failed; tab-separated), or delete one by its id, with its deliveries."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("action", choices=["list", "delete"])
        parser.add_argument("endpoint_id", nargs="?", help="with 'delete': the endpoint's id")

    def handle(self, *args: Any, email: str, action: str, endpoint_id: str | None, **options: Any) -> None:
        account = account_or_error(email)
        if action == "list":
            if endpoint_id is not None:
                raise CommandError("'list' takes no id")
            endpoints = EventEndpoint.objects.filter(account=account).annotate(
                waiting=Count("deliveries", filter=Q(deliveries__status__in=UNFINISHED)),
                failed=Count("deliveries", filter=Q(deliveries__status=EventDeliveryStatus.FAILED)),
            )
            for endpoint in endpoints:
                self.stdout.write(listing_line(endpoint))
            self.stdout.write(f"{len(endpoints)} event endpoint(s) for {email}.")
            return
        if not endpoint_id:
            raise CommandError("'delete' needs the endpoint's id")
        try:
            doomed = endpoint_get(account=account, endpoint_id=endpoint_id)
        except EventEndpointNotFound as error:
            raise CommandError(error.message) from None
        url = doomed.url
        endpoint_delete(doomed)
        self.stdout.write(f"Deleted the event endpoint {endpoint_id} ({url}) of {email}, with its deliveries.")


def listing_line(endpoint: Any) -> str:
    """One endpoint as `list` prints it; ``endpoint`` carries the ``waiting`` and ``failed`` counts annotated."""
    types = ",".join(endpoint.events)
    fields = [str(endpoint.id), endpoint.url, types, iso_utc(endpoint.created_at)]
    return "\t".join([*fields, f"{endpoint.waiting} waiting", f"{endpoint.failed} failed"])
