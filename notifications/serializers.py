"""Job and delivery-log output shapes, camelCase on the wire."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.fields import SkipField

from core.api.envelope import iso_utc
from core.api.fields import IsoDateTimeField, OneOfField
from core.api.pages import PaginationSerializer
from notifications.models import SKIPPED_RECIPIENTS, Job, JobStatus, JobType, Priority
from notifications.selectors import job_payload_for_owner, job_payload_for_staff
from providers.names import EmailEventType, ProviderName
from suppressions.models import SuppressionReason

# The values the job fields take, for the OpenAPI document's enums.
JOB_FIELD_CHOICES: dict[str, list[str] | list[int]] = {
    "type": JobType.values,
    "status": JobStatus.values,
    "priority": Priority.values,
}


# A live job's answers are as they always were; a test key's job says it is one.
TEST_FIELD_TEXT = "Present, and true, only on a job accepted with a test API key: its attempts send nothing."


def job_enum_field(name: str) -> OneOfField:
    return OneOfField(choices=JOB_FIELD_CHOICES[name])


# The 202 body's shape, for the schema only; job_accepted builds it (the hot path skips DRF).
# (Comments, not docstrings, in this module: drf-spectacular shows docstrings to API clients.)
class JobAcceptedSerializer(serializers.Serializer):
    jobId = serializers.CharField(source="id")
    status = job_enum_field("status")
    type = job_enum_field("type")
    createdAt = IsoDateTimeField(source="created_at")
    test = serializers.BooleanField(required=False, help_text=TEST_FIELD_TEXT)


def job_accepted(job: Job) -> dict[str, Any]:
    accepted: dict[str, Any] = {
        "jobId": str(job.id),
        "status": job.status,
        "type": job.type,
        "createdAt": iso_utc(job.created_at),
    }
    if job.test:
        accepted["test"] = True
    return accepted


class DeliveryLogSerializer(serializers.Serializer):
    id = serializers.CharField()
    attempt = serializers.IntegerField()
    status = serializers.CharField()
    usedProvider = serializers.CharField(source="used_provider", allow_null=True)
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    responseStatus = serializers.IntegerField(source="response_status", allow_null=True)
    durationMs = serializers.IntegerField(source="duration_ms", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")


class EmailEventSerializer(serializers.Serializer):
    type = OneOfField(choices=EmailEventType.values)
    provider = OneOfField(choices=ProviderName.values)
    occurredAt = IsoDateTimeField(source="occurred_at")
    recipient = serializers.CharField()


class JobSlimSerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField()
    # Where the job goes, in lower case: an email's recipient, a webhook URL's host.
    destination = serializers.CharField()
    priority = serializers.IntegerField()
    attempts = serializers.IntegerField()
    errorMessage = serializers.CharField(source="error_message", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    completedAt = IsoDateTimeField(source="completed_at", allow_null=True)
    # A scheduled send's time (sendAt); null for a job sent at once.
    scheduledFor = IsoDateTimeField(source="scheduled_for", allow_null=True)
    test = serializers.BooleanField(required=False, help_text=TEST_FIELD_TEXT)

    def to_representation(self, instance: Job) -> dict[str, Any]:
        shown: dict[str, Any] = super().to_representation(instance)
        if not shown["test"]:
            del shown["test"]
        return shown


# The context's flag for a caller who sees a webhook's secret header values (docs/rules.md, "Webhooks").
SECRET_HEADERS_SHOWN = "secret_headers_shown"


# The payload as the owner sent it, a webhook's secret header values included, for a caller the context's
# SECRET_HEADERS_SHOWN lets see them; for any other, with them masked as they are stored.
# An email's skipped recipients are shown beside it (JobDetailSerializer's skippedRecipients), not in it.
class OwnerPayloadField(serializers.JSONField):
    def get_attribute(self, instance: Job) -> dict[str, Any]:
        payload = (
            job_payload_for_owner(instance)
            if self.context.get(SECRET_HEADERS_SHOWN)
            else job_payload_for_staff(instance)
        )
        if SKIPPED_RECIPIENTS in payload:
            return {name: value for name, value in payload.items() if name != SKIPPED_RECIPIENTS}
        return payload


class SkippedRecipientSerializer(serializers.Serializer):
    email = serializers.CharField()
    reason = OneOfField(choices=SuppressionReason.values)


# An email job's cc and bcc on the suppression list, left out of its message; none on a webhook job.
class SkippedRecipientsField(serializers.ListField):
    child = SkippedRecipientSerializer()

    def get_attribute(self, instance: Job) -> list[dict[str, str]]:
        if instance.type != JobType.EMAIL:
            raise SkipField()
        skipped: list[dict[str, str]] = instance.payload.get(SKIPPED_RECIPIENTS, [])
        return skipped


class JobDetailSerializer(JobSlimSerializer):
    payload = OwnerPayloadField()
    skippedRecipients = SkippedRecipientsField(
        source="*",
        required=False,
        help_text="On an email job only: its `cc` and `bcc` addresses on the account's suppression list, left out of "
        "the message, each with the list's `reason`; empty when none was.",
    )
    maxAttempts = serializers.IntegerField(source="max_attempts")
    startedAt = IsoDateTimeField(source="started_at", allow_null=True)
    nextAttemptAt = IsoDateTimeField(source="next_attempt_at", allow_null=True)
    deliveryLogs = DeliveryLogSerializer(source="delivery_logs", many=True)
    # What the email providers reported about the message (oldest first); empty for webhooks.
    events = EmailEventSerializer(source="email_events", many=True)


class JobPageSerializer(serializers.Serializer):
    data = JobSlimSerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()


# Schema only: the job shapes above as the OpenAPI document gives them, with `type`, `status`
# and `priority` as enums. The serializers above answer with the same values.
class JobEnumsSchemaMixin(serializers.Serializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # Replacing a key keeps its place: the properties stay in the order the answers have them.
        fields.update({name: job_enum_field(name) for name in JOB_FIELD_CHOICES if name in fields})
        return fields


@extend_schema_serializer(component_name="JobSlim")
class JobSlimSchema(JobEnumsSchemaMixin, JobSlimSerializer):
    pass


@extend_schema_serializer(component_name="JobDetail")
class JobDetailSchema(JobEnumsSchemaMixin, JobDetailSerializer):
    pass


@extend_schema_serializer(component_name="JobPage")
class JobPageSchema(JobPageSerializer):
    data = JobSlimSchema(many=True)
