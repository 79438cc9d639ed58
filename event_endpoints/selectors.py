"""Reading an account's event endpoints and their deliveries (docs/event-endpoints.md)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from accounts.models import Account
from core.errors import EventEndpointNotFound
from core.paging import page_rows
from event_endpoints.models import EventDelivery, EventEndpoint


def endpoint_list(*, account: Account) -> list[EventEndpoint]:
    """The account's endpoints, oldest first (there are at most ENDPOINTS_PER_ACCOUNT)."""
    return list(EventEndpoint.objects.filter(account=account))


def endpoint_get(*, account: Account, endpoint_id: str) -> EventEndpoint:
    """The account's endpoint of this id; another account's, or none, is EventEndpointNotFound."""
    endpoint = _endpoints_with_id(account, endpoint_id).first()
    if endpoint is None:
        raise EventEndpointNotFound()
    return endpoint


def _endpoints_with_id(account: Account, endpoint_id: str) -> QuerySet[EventEndpoint]:
    """The account's endpoint of this id, as a query; none for a text that is not a UUID."""
    try:
        return EventEndpoint.objects.filter(account=account, id=uuid.UUID(endpoint_id))
    except ValueError:
        return EventEndpoint.objects.none()


def delivery_list(*, endpoint: EventEndpoint, page: int, limit: int) -> tuple[list[EventDelivery], int]:
    """One page of the endpoint's deliveries, newest first, with their events, and their total."""
    deliveries = endpoint.deliveries.select_related("event").order_by("-created_at", "-id")
    return page_rows(deliveries, page=page, limit=limit)


def recent_deliveries(*, account: Account, limit: int) -> list[EventDelivery]:
    """The account's latest deliveries to any endpoint, newest first (the dashboard's events page)."""
    deliveries = EventDelivery.objects.filter(endpoint__account=account).select_related("event", "endpoint")
    return list(deliveries.order_by("-created_at", "-id")[:limit])
