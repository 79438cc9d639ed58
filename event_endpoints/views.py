"""Event endpoints over the API: add, list, delete, and each one's deliveries (docs/event-endpoints.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import CHANGES, LIVE_ONLY, READS, ApiKeyView
from accounts.authentication import request_account
from core.api.pages import PageQuery, page_parameters
from core.api.schema import BODY_REFUSALS, QUERY_REFUSED, ErrorAnswer, error_responses
from core.errors import EventEndpointLimit, EventEndpointNotFound
from event_endpoints.models import ENDPOINTS_PER_ACCOUNT
from event_endpoints.selectors import delivery_list, endpoint_get, endpoint_list
from event_endpoints.serializers import (
    EVENT_TYPES_TEXT,
    EventDeliveryPageSerializer,
    EventEndpointListSerializer,
    EventEndpointRequestSerializer,
    EventEndpointSerializer,
)
from event_endpoints.services import endpoint_create, endpoint_delete

DELETED_MESSAGE = "Event endpoint deleted"
NOT_FOUND = ErrorAnswer("No endpoint of this id in the account.", EventEndpointNotFound)


class EventEndpointsView(ApiKeyView):
    key_scopes = {"GET": READS, "POST": CHANGES}
    key_modes = {"GET": LIVE_ONLY, "POST": LIVE_ONLY}

    @extend_schema(
        summary="List event endpoints",
        description="The account's event endpoints, oldest first.",
        responses={200: EventEndpointListSerializer, **error_responses(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        endpoints = endpoint_list(account=request_account(request))
        return Response(EventEndpointListSerializer({"data": endpoints}).data)

    @extend_schema(
        summary="Add an event endpoint",
        description=(
            "From now on each event of the listed types is POSTed to `url` as "
            '`{"id", "type", "createdAt", "data"}`, signed as webhook jobs are (both signature schemes) and tried up '
            "to 3 times, with `X-Webhook-Id` and `webhook-id` the event's id, the same on every attempt: "
            f"deduplicate on it. Types: {EVENT_TYPES_TEXT}. "
            f"At most {ENDPOINTS_PER_ACCOUNT} endpoints per account."
        ),
        request=EventEndpointRequestSerializer,
        responses={
            201: EventEndpointSerializer,
            **error_responses(
                400,
                401,
                403,
                409,
                411,
                413,
                415,
                429,
                descriptions={
                    400: ErrorAnswer(
                        "The body holds a field the operation does not take, the URL is not an HTTPS URL or points "
                        "to a local address, `events` is not a non-empty list, or names an unknown type (the message "
                        "names it).",
                        *BODY_REFUSALS,
                    ),
                    409: ErrorAnswer(f"The account has {ENDPOINTS_PER_ACCOUNT} endpoints already.", EventEndpointLimit),
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = EventEndpointRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = endpoint_create(account=request_account(request), **serializer.validated_data)
        return Response(EventEndpointSerializer(endpoint).data, status=201)


class EventEndpointView(ApiKeyView):
    key_scopes = {"DELETE": CHANGES}
    key_modes = {"DELETE": LIVE_ONLY}

    @extend_schema(
        summary="Delete an event endpoint",
        description="Stops every delivery to it at once, those being retried included.",
        responses={
            200: inline_serializer(
                "EventEndpointDeleted", {"id": serializers.UUIDField(), "message": serializers.CharField()}
            ),
            **error_responses(400, 401, 403, 404, 429, descriptions={404: NOT_FOUND}),
        },
    )
    def delete(self, request: Request, endpoint_id: str) -> Response:
        endpoint = endpoint_get(account=request_account(request), endpoint_id=endpoint_id)
        deleted = {"id": str(endpoint.id), "message": DELETED_MESSAGE}  # delete() takes the instance's id away
        endpoint_delete(endpoint)
        return Response(deleted)


class EventDeliveriesView(ApiKeyView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": LIVE_ONLY}

    @extend_schema(
        summary="List an event endpoint's deliveries, newest first",
        description=(
            "Each event sent or being sent to the endpoint: its status (`pending`, `processing` while tried or "
            "waiting for a retry, `completed`, `failed`), its attempts, and the last attempt's answer and error."
        ),
        parameters=[*page_parameters("Deliveries")],
        responses={
            200: EventDeliveryPageSerializer,
            **error_responses(400, 401, 403, 404, 429, descriptions={400: QUERY_REFUSED, 404: NOT_FOUND}),
        },
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        page = PageQuery.of(request).asked_page
        endpoint = endpoint_get(account=request_account(request), endpoint_id=endpoint_id)
        deliveries, total = delivery_list(endpoint=endpoint, page=page.number, limit=page.limit)
        return Response(EventDeliveryPageSerializer({"data": deliveries, "pagination": page.pagination(total)}).data)
