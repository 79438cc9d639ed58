"""Job and delivery-log output shapes, camelCase on the wire."""

from __future__ import annotations

from rest_framework import serializers

from core.api.envelope import iso_utc
from core.api.fields import IsoDateTimeField
from notifications.models import Job


class JobAcceptedSerializer(serializers.Serializer):
    """The 202 body's shape, for the schema; :func:`job_accepted` builds it (the hot path skips DRF)."""

    jobId = serializers.CharField(source="id")
    status = serializers.CharField()
    type = serializers.CharField()
    createdAt = IsoDateTimeField(source="created_at")


def job_accepted(job: Job) -> dict[str, str]:
    return {"jobId": str(job.id), "status": job.status, "type": job.type, "createdAt": iso_utc(job.created_at)}


class DeliveryLogSerializer(serializers.Serializer):
    id = serializers.CharField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    usedProvider = serializers.CharField(source="used_provider", allow_null=True)
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    responseStatus = serializers.IntegerField(source="response_status", allow_null=True)
    durationMs = serializers.IntegerField(source="duration_ms", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")


class JobSlimSerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField()
    priority = serializers.IntegerField()
    attempts = serializers.IntegerField()
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    completedAt = IsoDateTimeField(source="completed_at", allow_null=True)


class JobDetailSerializer(JobSlimSerializer):
    payload = serializers.JSONField()
    maxAttempts = serializers.IntegerField(source="max_attempts")
    startedAt = IsoDateTimeField(source="started_at", allow_null=True)
    nextAttemptAt = IsoDateTimeField(source="next_attempt_at", allow_null=True)
    deliveryLogs = DeliveryLogSerializer(source="delivery_logs", many=True)


class PaginationSerializer(serializers.Serializer):
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField()
    totalPages = serializers.IntegerField()


class JobPageSerializer(serializers.Serializer):
    data = JobSlimSerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()
