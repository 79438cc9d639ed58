"""The account's output shapes, camelCase on the wire."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from accounts.models import AuditAction, KeyMode
from core.api.fields import IsoDateTimeField, OneOfField
from core.api.pages import PaginationSerializer


# (Comments, not docstrings, in this module: drf-spectacular shows docstrings to API clients.)
@extend_schema_serializer(component_name="AuditApiKey")
class AuditApiKeySerializer(serializers.Serializer):
    # The key's name (keys are never renamed), and whether it is a live or a test key.
    name = serializers.CharField()
    mode = OneOfField(choices=KeyMode.values)


@extend_schema_serializer(component_name="AuditEntry")
class AuditEntrySerializer(serializers.Serializer):
    action = OneOfField(choices=AuditAction.values)
    # `holder`, `operator` or `staff:<username>`.
    actor = serializers.CharField()
    target = serializers.CharField()
    # The client's address; null for an operator's change, made outside a request.
    ip = serializers.CharField(allow_null=True)
    # The API key the holder made the change with; null for the dashboard's session, staff and an operator.
    apiKey = AuditApiKeySerializer(source="api_key", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")


@extend_schema_serializer(component_name="AuditPage")
class AuditPageSerializer(serializers.Serializer):
    data = AuditEntrySerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()
