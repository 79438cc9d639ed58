"""Apps' and endpoints' request and answer shapes, camelCase on the wire (docs/customer-webhooks.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core.api.fields import TEMPLATE_ID, HttpsUrlField, IsoDateTimeField, StrictField, TextField, whole_value
from core.api.pages import PaginationSerializer
from core.api.serializers import BodySerializer
from customer_webhooks.models import (
    APP_UID,
    APP_UID_RULE,
    DESCRIPTION_MAX_LENGTH,
    EVENT_TYPE_MAX_LENGTH,
    EVENT_TYPE_PATTERN,
    EVENT_TYPE_RULE,
    EVENT_TYPES_MAX,
    NAME_MAX_LENGTH,
    RATE_LIMIT_MAX,
    UID_MAX_LENGTH,
    Endpoint,
    is_event_type,
)
from notifications.delivery.http import is_refused_target
from notifications.engine.app_endpoints import FAILING, GONE

# (Comments, not docstrings, in this module: drf-spectacular shows docstrings to API clients.)

# A uid is never shaped like a UUID (32 hexadecimal digits, hyphens anywhere among them), so that an app's id or uid
# in a path names one app only (customer_webhooks.selectors.app_get).
UUID_SHAPED = TEMPLATE_ID
APP_UID_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": UID_MAX_LENGTH,
    "pattern": whole_value(f"(?!(?:{UUID_SHAPED.pattern})$){APP_UID.pattern}"),
}

# Why an endpoint is disabled, as its answer says (docs/customer-webhooks.md, "Disabling").
HOLDER = "holder"
DISABLED_REASONS = [HOLDER, GONE, FAILING]

EVENT_TYPE_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": EVENT_TYPE_MAX_LENGTH,
    "pattern": whole_value(EVENT_TYPE_PATTERN.pattern),
}


@extend_schema_field(APP_UID_SCHEMA)
class AppUidField(StrictField):
    invalid_message = required_message = f"{{name}} must be {APP_UID_RULE}"

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not APP_UID.fullmatch(data):
            self.fail("invalid")
        if UUID_SHAPED.fullmatch(data):
            self.reject("{name} must not be shaped like a UUID")
        return data


@extend_schema_field(EVENT_TYPE_SCHEMA)
class EventTypeField(StrictField):
    """An event type (``invoice.paid``): what a message is sent as and an endpoint receives."""

    invalid_message = required_message = f"{{name}} must be {EVENT_TYPE_RULE}"

    def to_internal_value(self, data: Any) -> str:
        if not is_event_type(data):
            self.fail("invalid")
        return str(data)


@extend_schema_field({"type": "array", "maxItems": EVENT_TYPES_MAX, "uniqueItems": True, "items": EVENT_TYPE_SCHEMA})
class EventTypesField(StrictField):
    invalid_message = required_message = f"{{name}} must be a list of at most {EVENT_TYPES_MAX} event types"

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list) or len(data) > EVENT_TYPES_MAX:
            self.fail("invalid")
        for index, event_type in enumerate(data):
            if not is_event_type(event_type):
                self.reject(f"{{name}} must be event types: {EVENT_TYPE_RULE}", at=f"[{index}]")
            if event_type in data[:index]:
                self.reject("{name} names {type} twice", type=event_type)
        return data


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": RATE_LIMIT_MAX})
class RateLimitField(StrictField):
    invalid_message = f"{{name}} must be a whole number of deliveries a second, from 1 to {RATE_LIMIT_MAX:,}, or null"

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= RATE_LIMIT_MAX:
            self.fail("invalid")
        return data


@extend_schema_field({"type": "boolean"})
class BooleanField(StrictField):
    invalid_message = required_message = "{name} must be true or false"

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


def name_field(*, required: bool = True) -> TextField:
    return TextField(max_length=NAME_MAX_LENGTH, single_line=True, required=required)


def url_field(*, required: bool = True) -> HttpsUrlField:
    # A webhook's URL rules and its address filter, as a send checks them (docs/rules.md, "Webhooks").
    return HttpsUrlField(refused=is_refused_target, required=required)


def description_field() -> TextField:
    return TextField(max_length=DESCRIPTION_MAX_LENGTH, required=False, allow_null=True)


@extend_schema_serializer(component_name="AppCreateRequest")
class AppCreateRequestSerializer(BodySerializer):
    uid = AppUidField(required=False)
    name = name_field()


# (The document names a PATCH's body "Patched" and this name: PatchedAppRequest.)
@extend_schema_serializer(component_name="AppRequest")
class AppUpdateRequestSerializer(BodySerializer):
    uid = AppUidField(required=False)
    name = name_field(required=False)


@extend_schema_serializer(component_name="App")
class AppSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    # The holder's own id for the app's customer; null when it gave none.
    uid = serializers.CharField(allow_null=True)
    name = serializers.CharField()
    createdAt = IsoDateTimeField(source="created_at")


@extend_schema_serializer(component_name="AppPage")
class AppPageSerializer(serializers.Serializer):
    data = AppSerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()


@extend_schema_serializer(component_name="EndpointCreateRequest")
class EndpointCreateRequestSerializer(BodySerializer):
    url = url_field()
    eventTypes = EventTypesField(required=False, source="event_types")
    description = description_field()
    rateLimit = RateLimitField(required=False, allow_null=True, source="rate_limit")


# (PatchedEndpointRequest in the document.)
@extend_schema_serializer(component_name="EndpointRequest")
class EndpointUpdateRequestSerializer(BodySerializer):
    url = url_field(required=False)
    eventTypes = EventTypesField(required=False, source="event_types")
    description = description_field()
    rateLimit = RateLimitField(required=False, allow_null=True, source="rate_limit")
    disabled = BooleanField(required=False)


@extend_schema_serializer(component_name="Endpoint")
class EndpointSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    # With a user:password in it shown as ***.
    url = serializers.CharField()
    # Empty: every event type.
    eventTypes = serializers.ListField(child=serializers.CharField(), source="event_types")
    description = serializers.CharField()
    # Deliveries a second at most; null: no limit.
    rateLimit = serializers.IntegerField(source="rate_limit", allow_null=True)
    disabled = serializers.BooleanField()
    # Null while enabled; else why: "holder" (the holder disabled it), "gone" (it answered 410 Gone), "failing" (every
    # delivery failed for ENDPOINT_DISABLE_AFTER_SECONDS).
    disabledReason = serializers.SerializerMethodField()
    createdAt = IsoDateTimeField(source="created_at")

    @extend_schema_field({"type": ["string", "null"], "enum": [*DISABLED_REASONS, None]})
    def get_disabledReason(self, endpoint: Endpoint) -> str | None:
        if not endpoint.disabled:
            return None
        # NotifyHub keeps why it disabled an endpoint; the holder's own disabling leaves no reason.
        return endpoint.disabled_reason or HOLDER


@extend_schema_serializer(component_name="EndpointList")
class EndpointListSerializer(serializers.Serializer):
    data = EndpointSerializer(many=True)  # type: ignore[assignment]  # the list's field, not Serializer.data


@extend_schema_serializer(component_name="EndpointSecret")
class EndpointSecretSerializer(serializers.Serializer):
    # `whsec_` and base64: the key Standard Webhooks' libraries take as it is.
    secret = serializers.CharField()


# Making a portal link and revoking the links take nothing: the body may be left out, or be `{}`; any field in it
# is refused as unknown.
class PortalRequestSerializer(BodySerializer):
    pass


class PortalLinkSerializer(serializers.Serializer):
    # The link to hand the app's customer; a bearer secret until it expires.
    url = serializers.URLField()
    expiresAt = IsoDateTimeField(source="expires_at")


class PortalRevokedSerializer(serializers.Serializer):
    # Every link of the app made up to this time, and every session opened with one, is ended.
    revokedAt = IsoDateTimeField(source="revoked_at")
