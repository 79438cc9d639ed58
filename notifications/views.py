from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import AccountHolderView, ApiKeyView
from accounts.authentication import request_account
from accounts.models import Account
from core.api.envelope import success_response
from core.api.fields import (
    EmailAddressField,
    HeadersField,
    HttpsUrlField,
    JsonObjectField,
    OneOfField,
    PositiveIntegerParamField,
    TextField,
)
from core.api.serializers import RequestSerializer
from notifications.delivery.http import is_local_target
from notifications.delivery.wire import json_bytes
from notifications.models import Job, JobStatus, JobType, Priority
from notifications.selectors import job_get, job_list
from notifications.serializers import JobAcceptedSerializer, JobDetailSerializer, JobPageSerializer, job_accepted
from notifications.services import email_job_create, job_retry, webhook_job_create
from providers.names import ProviderName

WEBHOOK_METHODS = ["POST", "PUT", "PATCH", "DELETE"]
WEBHOOK_PAYLOAD_MAX_BYTES = 10 * 1024
MAX_PAGE_SIZE = 100
# RFC 5322 caps a header line at 998 characters.
SUBJECT_MAX_LENGTH = 998
EMAIL_BODY_MAX_LENGTH = 256 * 1024


def priority_field() -> OneOfField:
    return OneOfField(choices=Priority.values, required=False)


def idempotency_key_field() -> TextField:
    return TextField(max_length=255, single_line=True, required=False)


def provider_field() -> OneOfField:
    return OneOfField(choices=ProviderName.values, required=False)


class SendView(ApiKeyView):
    """Validate the body, create the job, answer 202 with its id."""

    InputSerializer: type[serializers.Serializer]

    def create_job(self, account: Account, data: dict[str, Any]) -> Job:
        raise NotImplementedError

    def post(self, request: Request) -> HttpResponse:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = self.create_job(request_account(request), serializer.validated_data)
        return success_response(job_accepted(job), status=202)


class SendEmailView(SendView):
    class InputSerializer(RequestSerializer):
        to = EmailAddressField()
        subject = TextField(max_length=SUBJECT_MAX_LENGTH, single_line=True)
        body = TextField(max_length=EMAIL_BODY_MAX_LENGTH)
        priority = priority_field()
        idempotencyKey = idempotency_key_field()
        provider = provider_field()
        fallback = provider_field()

        def get_fields(self) -> dict[str, serializers.Field]:
            # Declared here because "from" is a Python keyword; placed after "body" so
            # errors are reported in the order the spec lists the fields.
            fields = list(super().get_fields().items())
            after_body = [name for name, _ in fields].index("body") + 1
            fields.insert(after_body, ("from", EmailAddressField(required=False)))
            return dict(fields)

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            provider, fallback = attrs.get("provider"), attrs.get("fallback")
            if fallback is not None and provider is None:
                raise serializers.ValidationError("`fallback` requires `provider` to be set")
            if fallback is not None and fallback == provider:
                raise serializers.ValidationError("`provider` and `fallback` must be different")
            return attrs

    @extend_schema(summary="Queue an email", request=InputSerializer, responses={202: JobAcceptedSerializer})
    def post(self, request: Request) -> HttpResponse:
        return super().post(request)

    def create_job(self, account: Account, data: dict[str, Any]) -> Job:
        return email_job_create(
            account=account,
            to=data["to"],
            subject=data["subject"],
            body=data["body"],
            sender=data.get("from"),
            priority=data.get("priority"),
            provider=data.get("provider"),
            fallback=data.get("fallback"),
            idempotency_key=data.get("idempotencyKey"),
        )


class SendWebhookView(SendView):
    class InputSerializer(RequestSerializer):
        url = HttpsUrlField()
        payload = JsonObjectField()
        method = OneOfField(choices=WEBHOOK_METHODS, required=False)
        headers = HeadersField(required=False)
        priority = priority_field()
        idempotencyKey = idempotency_key_field()

        def validate_url(self, url: str) -> str:
            if not settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS and is_local_target(url):
                raise serializers.ValidationError("url must not point to a local or private network address")
            return url

        def validate_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
            if len(json_bytes(payload)) > WEBHOOK_PAYLOAD_MAX_BYTES:
                raise serializers.ValidationError("payload must be at most 10kb")
            return payload

    @extend_schema(summary="Queue a webhook delivery", request=InputSerializer, responses={202: JobAcceptedSerializer})
    def post(self, request: Request) -> HttpResponse:
        return super().post(request)

    def create_job(self, account: Account, data: dict[str, Any]) -> Job:
        return webhook_job_create(
            account=account,
            url=data["url"],
            payload=data["payload"],
            method=data.get("method", "POST"),
            headers=data.get("headers"),
            priority=data.get("priority"),
            idempotency_key=data.get("idempotencyKey"),
        )


def _job_detail(request: Request, job_id: str) -> Response:
    """One of the caller's jobs in full; another account's job is 404 like a missing one."""
    job = job_get(account=request_account(request), job_id=job_id)
    return Response(JobDetailSerializer(job).data)


class JobDetailView(ApiKeyView):
    @extend_schema(summary="Get job status", responses={200: JobDetailSerializer})
    def get(self, request: Request, job_id: str) -> Response:
        return _job_detail(request, job_id)


class UserJobDetailView(AccountHolderView):
    @extend_schema(summary="Get one of your jobs (dashboard session or API key)", responses={200: JobDetailSerializer})
    def get(self, request: Request, job_id: str) -> Response:
        return _job_detail(request, job_id)


class JobListView(ApiKeyView):
    class QuerySerializer(RequestSerializer):
        page = PositiveIntegerParamField(required=False)
        limit = PositiveIntegerParamField(required=False)
        type = OneOfField(choices=JobType.values, required=False)
        status = OneOfField(choices=JobStatus.values, required=False)

    @extend_schema(
        summary="List jobs, newest first",
        parameters=[
            OpenApiParameter("page", int, description="Page number, from 1"),
            OpenApiParameter("limit", int, description=f"Jobs per page, at most {MAX_PAGE_SIZE}"),
            OpenApiParameter("type", str, enum=JobType.values),
            OpenApiParameter("status", str, enum=JobStatus.values),
        ],
        responses={200: JobPageSerializer},
    )
    def get(self, request: Request) -> Response:
        query = self.QuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        page = query.validated_data.get("page", 1)
        limit = min(query.validated_data.get("limit", 20), MAX_PAGE_SIZE)
        jobs, total = job_list(
            account=request_account(request),
            page=page,
            limit=limit,
            type=query.validated_data.get("type"),
            status=query.validated_data.get("status"),
        )
        pagination = {"page": page, "limit": limit, "total": total, "totalPages": math.ceil(total / limit)}
        return Response(JobPageSerializer({"data": jobs, "pagination": pagination}).data)


class JobRetryView(ApiKeyView):
    @extend_schema(
        summary="Re-queue a failed job",
        request=None,
        responses={
            200: inline_serializer(
                "JobRequeued",
                {
                    "jobId": serializers.CharField(),
                    "status": serializers.CharField(),
                    "message": serializers.CharField(),
                },
            )
        },
    )
    def post(self, request: Request, job_id: str) -> Response:
        job = job_retry(account=request_account(request), job_id=job_id)
        return Response(
            {"jobId": str(job.id), "status": job.status, "message": "Job has been re-queued for processing"}
        )
