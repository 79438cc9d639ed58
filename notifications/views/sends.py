"""The sends: one email or webhook, or a batch of either, validated and queued as jobs."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_MODE, SENDS, ApiKeyView
from accounts.authentication import request_account, request_in_test_mode
from accounts.models import Account
from core.api.exceptions import ValidationFailed, error_status, validation_failed
from core.api.fields import (
    OneOfField,
)
from core.api.parsers import ListCap
from core.api.schema import (
    BODY_REFUSALS,
    ErrorAnswer,
    error_responses,
    response_links,
)
from core.api.serializers import refuse_unknown_fields
from core.errors import (
    AccountInactive,
    CodedError,
    DuplicateRequest,
    FallbackNotConfigured,
    PlatformSenderOnly,
    PriorityNeedsPaidPlan,
    ProviderKeyRequired,
    ProviderNotConfigured,
    QuotaExceeded,
    RoutingNeedsPaidPlan,
    SenderOutsideDomain,
    SendingDomainPending,
    SendingDomainRequired,
)
from notifications.batches import BATCH_MAX_ITEMS, Slot, batch_store
from notifications.models import Job
from notifications.send_requests import (
    RICH_EMAIL_TEXT,
    SECRET_NAME_PARTS_TEXT,
    SEND_AT_TEXT,
    TEMPLATE_TEXT,
    TOPIC_TEXT,
    EmailRequestSerializer,
    WebhookRequestSerializer,
)
from notifications.serializers import (
    JobAcceptedSerializer,
    job_accepted,
)
from notifications.services import (
    email_job_new,
    job_store,
    webhook_job_new,
)
from notifications.views.jobs import (
    ACCEPTED_OR_REQUEUED_JOB,
    API_CLIENT,
    JOB_CANCEL,
    JOB_RETRY,
    JOB_STATUS,
    job_cancel_link,
    job_retry_link,
    job_status_link,
)


def send_errors(*, refused: ErrorAnswer, not_permitted: ErrorAnswer) -> dict[int, Any]:
    """What a send endpoint answers besides 202, for the OpenAPI document."""
    duplicate = ErrorAnswer("A job with this `idempotencyKey` exists already; no new job is created.", DuplicateRequest)
    return error_responses(
        400, 401, 403, 409, 411, 413, 415, 429, descriptions={400: refused, 403: not_permitted, 409: duplicate}
    )


EMAIL_SEND_ERRORS = send_errors(
    refused=ErrorAnswer(
        "The body holds a field the operation does not take, breaks a rule (the message names the field) or is not "
        "a JSON object; the sender, or a provider, is not one the account may use; or the API key was sent in both "
        "headers.",
        *BODY_REFUSALS,
        PlatformSenderOnly,
        SenderOutsideDomain,
        ProviderNotConfigured,
        FallbackNotConfigured,
    ),
    not_permitted=ErrorAnswer(
        "The account is inactive, its monthly quota is used up, or its plan or setup does not allow this send.",
        AccountInactive,
        QuotaExceeded,
        RoutingNeedsPaidPlan,
        PriorityNeedsPaidPlan,
        ProviderKeyRequired,
        SendingDomainRequired,
        SendingDomainPending,
    ),
)
WEBHOOK_SEND_ERRORS = send_errors(
    refused=ErrorAnswer(
        "The body holds a field the operation does not take, breaks a rule (the message names the field), is not a "
        "JSON object, or the API key was sent in both headers.",
        *BODY_REFUSALS,
    ),
    not_permitted=ErrorAnswer(
        "The account is inactive, or its monthly quota is used up.", AccountInactive, QuotaExceeded
    ),
)


SEND_LINKS = response_links(
    202,
    job_status_link(API_CLIENT.operation_id(JOB_STATUS), ACCEPTED_OR_REQUEUED_JOB),
    job_retry_link(API_CLIENT.operation_id(JOB_RETRY), ACCEPTED_OR_REQUEUED_JOB),
    job_cancel_link(API_CLIENT.operation_id(JOB_CANCEL), ACCEPTED_OR_REQUEUED_JOB),
)


class SendView(ApiKeyView):
    """Validate the body, create the job, answer 202 with its id."""

    key_scopes = {"POST": SENDS}
    key_modes = {"POST": ANY_MODE}

    InputSerializer: type[serializers.Serializer]

    @staticmethod
    def new_job(account: Account, data: dict[str, Any], *, test: bool) -> Job:
        """The job of a valid body, checked against the account's rules and not stored yet; ``test``: the caller's
        mode."""
        raise NotImplementedError

    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        new_job = self.new_job(request_account(request), serializer.validated_data, test=request_in_test_mode(request))
        job = job_store(new_job)
        return Response(job_accepted(job), status=202)


class SendEmailView(SendView):
    InputSerializer = EmailRequestSerializer

    @property
    def max_body_bytes(self) -> int:
        # Room for 10 MiB of attachments in base64 (docs/rules.md, "Attachments").
        return settings.API_MAX_EMAIL_BODY_BYTES

    @extend_schema(
        summary="Queue an email",
        description=(
            "Validates the email and queues it as a job. The 202 answer confirms acceptance, not delivery: "
            "follow the job with Get job status.\n\n"
            "On the Free plan the sender is always the platform's `noreply` address, and `priority`, "
            "`provider` and `fallback` are not allowed. On a paid plan the account needs a provider key and "
            "a verified sending domain; `from` must be on that domain. `provider` forces the email through "
            "that provider only, `fallback` (which requires `provider`) is tried if it fails.\n\n"
            f"{SEND_AT_TEXT}\n\n"
            f"{RICH_EMAIL_TEXT}\n\n"
            f"{TEMPLATE_TEXT}\n\n"
            f"{TOPIC_TEXT}"
        ),
        request=EmailRequestSerializer,
        responses={202: JobAcceptedSerializer, **EMAIL_SEND_ERRORS},
        extensions=SEND_LINKS,
    )
    def post(self, request: Request) -> Response:
        return super().post(request)

    @staticmethod
    def new_job(account: Account, data: dict[str, Any], *, test: bool) -> Job:
        return email_job_new(
            account=account,
            to=data["to"],
            subject=data.get("subject"),
            body=data.get("body"),
            sender=data.get("from"),
            priority=data.get("priority"),
            provider=data.get("provider"),
            fallback=data.get("fallback"),
            idempotency_key=data.get("idempotencyKey"),
            send_at=data.get("sendAt"),
            attachments=data.get("attachments", ()),
            test=test,
            cc=data.get("cc"),
            bcc=data.get("bcc"),
            reply_to=data.get("replyTo"),
            text=data.get("text"),
            headers=data.get("headers"),
            tags=data.get("tags"),
            metadata=data.get("metadata"),
            template=data.get("template"),
            template_version=data.get("templateVersion"),
            data=data.get("data"),
            topic=data.get("topic"),
        )


class SendWebhookView(SendView):
    InputSerializer = WebhookRequestSerializer

    @extend_schema(
        summary="Queue a webhook delivery",
        description=(
            "Queues an HTTP request to an HTTPS URL, carrying `payload` (at most 10 KB) as its JSON body "
            "with `Content-Type: application/json` and any `headers` given. A 2xx answer completes the job; "
            "a 5xx answer, a network error or a timeout is retried, up to 3 attempts; a 4xx answer fails it "
            "at once. With a signing secret set, each delivery is signed.\n\n"
            f"A header whose name contains {SECRET_NAME_PARTS_TEXT}, in any case, carries a credential: it is "
            "stored encrypted and shown to NotifyHub's staff and to `read` keys as `***`; Get job status shows it "
            "as sent to the dashboard's session and to a key that may send.\n\n"
            f"{SEND_AT_TEXT}"
        ),
        request=WebhookRequestSerializer,
        responses={202: JobAcceptedSerializer, **WEBHOOK_SEND_ERRORS},
        extensions=SEND_LINKS,
    )
    def post(self, request: Request) -> Response:
        return super().post(request)

    @staticmethod
    def new_job(account: Account, data: dict[str, Any], *, test: bool) -> Job:
        return webhook_job_new(
            account=account,
            url=data["url"],
            payload=data["payload"],
            method=data.get("method", "POST"),
            headers=data.get("headers"),
            priority=data.get("priority"),
            idempotency_key=data.get("idempotencyKey"),
            send_at=data.get("sendAt"),
            test=test,
        )


# What a batch's body holds besides its items: nothing.
BATCH_FIELDS = frozenset({"items"})
BATCH_SIZE_MESSAGE = f"items must hold 1 to {BATCH_MAX_ITEMS} notifications"
ITEM_NOT_OBJECT_MESSAGE = "Each item must be a JSON object"
BATCH_ITEM_STATUSES = [400, 403, 409]
BATCH_ITEM_REFUSED = inline_serializer(
    "BatchItemRefused",
    {
        "status": OneOfField(choices=BATCH_ITEM_STATUSES),
        "error": serializers.CharField(),
        "code": serializers.CharField(),
    },
)
BATCH_ACCEPTED = inline_serializer(
    "BatchAccepted",
    {
        "items": PolymorphicProxySerializer(
            component_name="BatchItemAnswer",
            serializers=[JobAcceptedSerializer, BATCH_ITEM_REFUSED],
            resource_type_field_name=None,
            many=True,
        )
    },
)


def batch_text(send: str) -> str:
    return (
        f"Queues up to {BATCH_MAX_ITEMS} {send}s in one request, each item the body of a single send. The 202 "
        "answer's `items` follow the request's order: an accepted item is what its single send answers, a refused "
        "one its own `status` (400, 403 or 409), `error` and `code`, the single send's. Each item is checked alone: "
        "its fields, the account's rules, its `idempotencyKey` (one held by a stored job or an earlier item is 409). "
        "The accepted items are stored together, all or none; the monthly quota must cover them all, or the whole "
        "batch is 403 and nothing is stored. The batch is one request against the rate limit."
    )


def batch_request(component: str, item: type[serializers.Serializer]) -> Any:
    fields: dict[str, serializers.Field] = {
        "items": serializers.ListField(child=item(), min_length=1, max_length=BATCH_MAX_ITEMS)
    }
    return inline_serializer(component, fields)


def batch_errors(send_errors: dict[int, Any]) -> dict[int, Any]:
    """A single send's answers for the batch as a whole: its own refusals, and the quota or the account for all."""
    refused = ErrorAnswer(
        f"The body holds a field other than `items`, `items` is not a list of 1 to {BATCH_MAX_ITEMS} entries, the "
        "body is not a JSON object, or the API key was sent in both headers.",
        *BODY_REFUSALS,
    )
    not_permitted = ErrorAnswer(
        "The account is inactive, or its monthly quota cannot cover every accepted item.",
        AccountInactive,
        QuotaExceeded,
    )
    return {**send_errors, **error_responses(400, 403, descriptions={400: refused, 403: not_permitted})}


class SendBatchView(ApiKeyView):
    """Check each item as its single send would, store the accepted ones together, answer each in its slot."""

    key_scopes = {"POST": SENDS}
    key_modes = {"POST": ANY_MODE}

    send: type[SendView]

    @property
    def max_body_bytes(self) -> int:
        return settings.API_MAX_BATCH_BODY_BYTES

    @property
    def list_cap(self) -> ListCap:
        # Each item is a single send's body, and no longer than one may be (docs/rules.md, "Batches").
        return ListCap(field="items", max_entries=BATCH_MAX_ITEMS, max_entry_chars=settings.API_MAX_BODY_BYTES)

    def post(self, request: Request) -> Response:
        refuse_unknown_fields(request.data, BATCH_FIELDS)
        items = request.data.get("items")
        if not isinstance(items, list) or not 1 <= len(items) <= BATCH_MAX_ITEMS:
            raise ValidationFailed(reason=BATCH_SIZE_MESSAGE)
        account, test = request_account(request), request_in_test_mode(request)
        # One serializer checks every item: its fields are bound once.
        checker = self.send.InputSerializer()
        slots = [self._slot(account, checker, item, test=test) for item in items]
        answered = batch_store(account=account, slots=slots, test=test)
        return Response({"items": [_slot_answer(slot) for slot in answered]}, status=202)

    def _slot(self, account: Account, checker: serializers.Serializer, item: Any, *, test: bool) -> Slot:
        if not isinstance(item, dict):
            return ValidationFailed(reason=ITEM_NOT_OBJECT_MESSAGE)
        try:
            return self.send.new_job(account, checker.run_validation(item), test=test)
        except serializers.ValidationError as refusal:
            return validation_failed(refusal.detail)
        except CodedError as refusal:
            return refusal


def _slot_answer(slot: Slot) -> dict[str, Any]:
    if isinstance(slot, Job):
        return job_accepted(slot)
    return {"status": error_status(type(slot)), "error": slot.message, "code": slot.code}


class SendEmailBatchView(SendBatchView):
    send = SendEmailView

    @extend_schema(
        summary="Queue a batch of emails",
        description=batch_text("email"),
        request=batch_request("EmailBatchRequest", SendEmailView.InputSerializer),
        responses={202: BATCH_ACCEPTED, **batch_errors(EMAIL_SEND_ERRORS)},
    )
    def post(self, request: Request) -> Response:
        return super().post(request)


class SendWebhookBatchView(SendBatchView):
    send = SendWebhookView

    @extend_schema(
        summary="Queue a batch of webhook deliveries",
        description=batch_text("webhook"),
        request=batch_request("WebhookBatchRequest", SendWebhookView.InputSerializer),
        responses={202: BATCH_ACCEPTED, **batch_errors(WEBHOOK_SEND_ERRORS)},
    )
    def post(self, request: Request) -> Response:
        return super().post(request)
