"""Messages' shapes, camelCase on the wire (docs/customer-webhooks.md, "Messages")."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.api.envelope import iso_utc
from core.api.fields import (
    IsoDateTimeField,
    JsonObjectField,
    OneOfField,
    TextField,
    ZonedDateTimeField,
)
from core.api.pages import PageQuery, PaginationSerializer
from core.api.serializers import BodySerializer
from customer_webhooks.messages import MessageSent, recover_since_refusal
from customer_webhooks.serializers import EventTypeField
from notifications.delivery.wire import json_bytes
from notifications.models import JobStatus

# A live message's answers are as a live job's; a test key's message says it is one.
TEST_FIELD_TEXT = "Present, and true, only on a message sent with a test API key: its deliveries send nothing."
# As a send's (docs/rules.md, "Idempotency").
IDEMPOTENCY_KEY_MAX_LENGTH = 255


class MessagePayloadField(JsonObjectField):
    """A message's payload: a JSON object of at most MESSAGE_MAX_PAYLOAD_BYTES as compact UTF-8 JSON, the bytes each
    endpoint receives."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        payload = super().to_internal_value(data)
        if len(json_bytes(payload)) > settings.MESSAGE_MAX_PAYLOAD_BYTES:
            self.reject(f"{{name}} must be at most {settings.MESSAGE_MAX_PAYLOAD_BYTES // 1024}kb")
        return payload


# (Comments, not docstrings, on the serializers: drf-spectacular shows docstrings to API clients.)
@extend_schema_serializer(component_name="MessageRequest")
class MessageRequestSerializer(BodySerializer):
    eventType = EventTypeField()
    payload = MessagePayloadField()
    idempotencyKey = TextField(max_length=IDEMPOTENCY_KEY_MAX_LENGTH, single_line=True, required=False)


class MessageListQuery(PageQuery):
    eventType = EventTypeField(required=False)


class _ShowsTest(serializers.Serializer):
    # `test` is shown only when true, as on a job.
    def to_representation(self, instance: Any) -> dict[str, Any]:
        shown: dict[str, Any] = super().to_representation(instance)
        if not shown.get("test"):
            shown.pop("test", None)
        return shown


class DeliveryAcceptedSerializer(serializers.Serializer):
    endpointId = serializers.UUIDField(source="endpoint_id")
    jobId = serializers.UUIDField(source="id")


# The 202 body's shape, for the schema; message_accepted builds it.
@extend_schema_serializer(component_name="MessageAccepted")
class MessageAcceptedSerializer(serializers.Serializer):
    messageId = serializers.UUIDField()
    eventType = serializers.CharField()
    createdAt = IsoDateTimeField()
    deliveries = DeliveryAcceptedSerializer(many=True)
    test = serializers.BooleanField(required=False, help_text=TEST_FIELD_TEXT)


def message_accepted(sent: MessageSent) -> dict[str, Any]:
    message = sent.message
    accepted: dict[str, Any] = {
        "messageId": str(message.id),
        "eventType": message.event_type,
        "createdAt": iso_utc(message.created_at),
        "deliveries": [{"endpointId": str(job.endpoint_id), "jobId": str(job.id)} for job in sent.deliveries],
    }
    if message.test:
        accepted["test"] = True
    return accepted


# One delivery as Get job status shows its job, without the payload (the message's) or the logs (the job's own).
@extend_schema_serializer(component_name="MessageDelivery")
class DeliverySerializer(serializers.Serializer):
    endpointId = serializers.UUIDField(source="endpoint_id")
    jobId = serializers.UUIDField(source="id")
    status = OneOfField(choices=JobStatus.values)
    attempts = serializers.IntegerField()
    maxAttempts = serializers.IntegerField(source="max_attempts")
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    nextAttemptAt = IsoDateTimeField(source="next_attempt_at", allow_null=True)
    completedAt = IsoDateTimeField(source="completed_at", allow_null=True)


@extend_schema_serializer(component_name="Message")
class MessageSerializer(_ShowsTest):
    id = serializers.UUIDField()
    eventType = serializers.CharField(source="event_type")
    createdAt = IsoDateTimeField(source="created_at")
    test = serializers.BooleanField(required=False, help_text=TEST_FIELD_TEXT)


@extend_schema_serializer(component_name="MessageDetail")
class MessageDetailSerializer(MessageSerializer):
    payload = serializers.JSONField()
    deliveries = DeliverySerializer(many=True)


@extend_schema_serializer(component_name="MessagePage")
class MessagePageSerializer(serializers.Serializer):
    data = MessageSerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()


class RecoverSinceField(ZonedDateTimeField):
    """Where an endpoint's recover starts: not in the future, and not before the oldest job retention keeps."""

    def to_internal_value(self, data: Any) -> datetime:
        since = super().to_internal_value(data)
        if refusal := recover_since_refusal(since):
            self.reject("{name} " + refusal)
        return since


@extend_schema_serializer(component_name="EndpointRecoverRequest")
class EndpointRecoverRequestSerializer(BodySerializer):
    since = RecoverSinceField()


@extend_schema_serializer(component_name="EndpointRecovered")
class EndpointRecoveredSerializer(serializers.Serializer):
    requeued = serializers.IntegerField()
