"""Event endpoints' shapes, camelCase on the wire."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core.api.fields import HttpsUrlField, IsoDateTimeField, OneOfField, StrictField
from core.api.pages import PaginationSerializer
from core.api.serializers import BodySerializer
from event_endpoints.models import EventDeliveryStatus, EventType
from notifications.delivery.http import is_refused_target

EVENT_TYPES_TEXT = ", ".join(f"`{event_type}`" for event_type in EventType.values)


@extend_schema_field(
    {"type": "array", "minItems": 1, "items": {"type": "string", "enum": EventType.values}, "uniqueItems": False}
)
class EventTypesField(StrictField):
    """A non-empty list of event types; an unknown one is named in the answer."""

    invalid_message = required_message = "{name} must be a non-empty list of event types"

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list) or not data:
            self.fail("invalid")
        for event_type in data:
            if not isinstance(event_type, str) or event_type not in EventType.values:
                raise serializers.ValidationError(f"Unknown event type: {event_type}")
        return data


# (Comments, not docstrings, on the output serializers: drf-spectacular shows docstrings to API clients.)
@extend_schema_serializer(component_name="EventEndpointRequest")
class EventEndpointRequestSerializer(BodySerializer):
    url = HttpsUrlField(refused=is_refused_target)
    events = EventTypesField()


@extend_schema_serializer(component_name="EventEndpoint")
class EventEndpointSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    # With a user:password in it shown as ***.
    url = serializers.CharField()
    events = serializers.ListField(child=OneOfField(choices=EventType.values))
    createdAt = IsoDateTimeField(source="created_at")


@extend_schema_serializer(component_name="EventEndpointList")
class EventEndpointListSerializer(serializers.Serializer):
    data = EventEndpointSerializer(many=True)  # type: ignore[assignment]  # the list's field, not Serializer.data


@extend_schema_serializer(component_name="EventDelivery")
class EventDeliverySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    eventId = serializers.UUIDField(source="event_id")
    type = OneOfField(choices=EventType.values, source="event.type")
    status = OneOfField(choices=EventDeliveryStatus.values)
    attempts = serializers.IntegerField()
    # The last attempt's: the endpoint's HTTP status (null after a network error), its time, and why it failed.
    responseStatus = serializers.IntegerField(source="response_status", allow_null=True)
    durationMs = serializers.IntegerField(source="duration_ms", allow_null=True)
    lastError = serializers.CharField(source="error_message", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    nextAttemptAt = IsoDateTimeField(source="next_attempt_at", allow_null=True)
    finishedAt = IsoDateTimeField(source="finished_at", allow_null=True)


@extend_schema_serializer(component_name="EventDeliveryPage")
class EventDeliveryPageSerializer(serializers.Serializer):
    data = EventDeliverySerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()
