"""Templates' request and answer shapes, camelCase on the wire (docs/templates.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.api.fields import IsoDateTimeField, TemplateAliasField, TemplateDataField, TextField
from core.api.pages import PaginationSerializer
from core.api.serializers import BodySerializer
from email_templates.engine import PART_MAX_CHARS, SUBJECT_MAX_CHARS
from email_templates.models import NAME_MAX_LENGTH


# (Comments, not docstrings, in this module: drf-spectacular shows docstrings to API clients.)
def subject_field() -> TextField:
    return TextField(max_length=SUBJECT_MAX_CHARS, single_line=True)


def part_field(*, required: bool = True) -> TextField:
    return TextField(max_length=PART_MAX_CHARS, required=required, required_message="{name} must be a string")


def name_field(*, required: bool = True) -> TextField:
    return TextField(max_length=NAME_MAX_LENGTH, single_line=True, required=required)


@extend_schema_serializer(component_name="TemplateCreateRequest")
class TemplateCreateRequestSerializer(BodySerializer):
    alias = TemplateAliasField()
    name = name_field()
    subject = subject_field()
    html = part_field()
    text = part_field(required=False)


@extend_schema_serializer(component_name="TemplateUpdateRequest")
class TemplateUpdateRequestSerializer(BodySerializer):
    name = name_field(required=False)
    subject = subject_field()
    html = part_field()
    text = part_field(required=False)


@extend_schema_serializer(component_name="TemplateRenderRequest")
class TemplateRenderRequestSerializer(BodySerializer):
    data = TemplateDataField()  # type: ignore[assignment]  # the body's field, not Serializer.data


@extend_schema_serializer(component_name="TemplateSummary")
class TemplateSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    alias = serializers.CharField()
    name = serializers.CharField()
    # The current version's number.
    version = serializers.IntegerField(source="current_version")
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")


@extend_schema_serializer(component_name="TemplatePage")
class TemplatePageSerializer(serializers.Serializer):
    data = TemplateSummarySerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()


# A template at one of its versions (a TemplateVersion with its template).
@extend_schema_serializer(component_name="Template")
class TemplateSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="template.id")
    alias = serializers.CharField(source="template.alias")
    name = serializers.CharField(source="template.name")
    version = serializers.IntegerField()
    subject = serializers.CharField()
    html = serializers.CharField()
    text = serializers.CharField(allow_null=True)
    variables = serializers.ListField(child=serializers.CharField())
    createdAt = IsoDateTimeField(source="template.created_at")
    # When this version was saved.
    versionCreatedAt = IsoDateTimeField(source="created_at")


@extend_schema_serializer(component_name="TemplateVersion")
class TemplateVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    variables = serializers.ListField(child=serializers.CharField())
    createdAt = IsoDateTimeField(source="created_at")


@extend_schema_serializer(component_name="TemplateVersionPage")
class TemplateVersionPageSerializer(serializers.Serializer):
    data = TemplateVersionSerializer(many=True)  # type: ignore[assignment]  # the page's field, not Serializer.data
    pagination = PaginationSerializer()


@extend_schema_serializer(component_name="TemplateRendered")
class TemplateRenderedSerializer(serializers.Serializer):
    subject = serializers.CharField()
    html = serializers.CharField()
    text = serializers.CharField()
