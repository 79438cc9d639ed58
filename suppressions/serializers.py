"""The suppression list's output shapes, camelCase on the wire."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.api.fields import IsoDateTimeField, OneOfField
from core.api.pages import PaginationSerializer
from providers.names import ProviderName
from suppressions.models import SuppressionReason


# (Comments, not docstrings, in this module: drf-spectacular shows docstrings to API clients.)
@extend_schema_serializer(component_name="Suppression")
class SuppressionSerializer(serializers.Serializer):
    email = serializers.CharField()
    reason = OneOfField(choices=SuppressionReason.values)
    # The provider whose event added the address, and the job that event was about; null when added by hand.
    provider = serializers.ChoiceField(choices=ProviderName.values, allow_null=True)
    jobId = serializers.UUIDField(source="job_id", allow_null=True)
    # The topic whose emails the address is off; null for every email.
    topic = serializers.CharField(allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")


@extend_schema_serializer(component_name="SuppressionPage")
class SuppressionPageSerializer(serializers.Serializer):
    data = SuppressionSerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()
