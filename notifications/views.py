from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_MODE, CHANGES, LIVE_ONLY, READS, SENDS, AccountHolderView, ApiKeyView
from accounts.authentication import request_account, request_in_test_mode
from accounts.models import Account, ApiKey
from core.api.exceptions import ApiKeyInBothHeaders, ValidationFailed, error_status, first_message
from core.api.fields import (
    EMAIL_SCHEMA,
    EmailAddressField,
    HeadersField,
    HttpsUrlField,
    JsonObjectField,
    OneOfField,
    PositiveIntegerParamField,
    TextField,
    ZonedDateTimeField,
    text_schema,
)
from core.api.pages import Page, PageQuery, page_parameters
from core.api.parsers import ListCap
from core.api.schema import (
    BODY_REFUSALS,
    QUERY_REFUSED,
    SESSION_ERROR_DESCRIPTIONS,
    ErrorAnswer,
    Link,
    OperationText,
    error_responses,
    response_links,
)
from core.api.serializers import RequestSerializer
from core.api.views import Mount, MountedView
from core.errors import (
    AccountInactive,
    CodedError,
    DuplicateRequest,
    FallbackNotConfigured,
    JobNotCancellable,
    JobNotFound,
    JobNotRetryable,
    PlatformSenderOnly,
    PriorityNeedsPaidPlan,
    ProviderKeyRequired,
    ProviderNotConfigured,
    QuotaExceeded,
    RetryNeedsProviderKey,
    RoutingNeedsPaidPlan,
    SenderOutsideDomain,
    SendingDomainPending,
    SendingDomainRequired,
)
from notifications.batches import BATCH_MAX_ITEMS, Slot, batch_store
from notifications.delivery.http import is_refused_target
from notifications.delivery.wire import json_bytes
from notifications.models import Job, JobStatus, JobType, Priority
from notifications.secret_headers import SECRET_NAME_PARTS
from notifications.selectors import JobFilters, daily_outcomes, job_get, job_list
from notifications.serializers import (
    SECRET_HEADERS_SHOWN,
    JobAcceptedSerializer,
    JobDetailSchema,
    JobDetailSerializer,
    JobPageSchema,
    JobPageSerializer,
    job_accepted,
    job_enum_field,
)
from notifications.services import (
    CANCELLED_MESSAGE,
    REQUEUED_MESSAGE,
    email_job_new,
    job_cancel,
    job_retry,
    job_store,
    webhook_job_new,
)
from providers.names import ProviderName

WEBHOOK_METHODS = ["POST", "PUT", "PATCH", "DELETE"]
WEBHOOK_PAYLOAD_MAX_BYTES = 10 * 1024
# RFC 5322 caps a header line at 998 characters.
SUBJECT_MAX_LENGTH = 998
EMAIL_BODY_MAX_LENGTH = 256 * 1024
# Which custom headers are kept secret, as the send operation's description tells API clients.
SECRET_NAME_PARTS_TEXT = ", ".join(f"`{part}`" for part in SECRET_NAME_PARTS[:-1]) + f" or `{SECRET_NAME_PARTS[-1]}`"


def priority_field() -> OneOfField:
    return OneOfField(choices=Priority.values, required=False)


# The furthest ahead a send may be scheduled.
SEND_AT_MAX_AHEAD = timedelta(days=30)


class SendAtField(ZonedDateTimeField):
    """When a send goes out (docs/rules.md, "Scheduled sends"): at most SEND_AT_MAX_AHEAD from now; a past time
    sends at once."""

    def __init__(self) -> None:
        super().__init__(required=False)

    def to_internal_value(self, data: Any) -> datetime:
        moment = super().to_internal_value(data)
        if moment > timezone.now() + SEND_AT_MAX_AHEAD:
            self.reject("{name} must be within 30 days")
        return moment


SEND_AT_TEXT = (
    "`sendAt` (an RFC 3339 date-time with its zone, at most 30 days ahead) schedules the job: it stays `pending`, "
    "shown with `scheduledFor`, until then, and can be cancelled until it goes out. A time already past sends at once."
)


def idempotency_key_field() -> TextField:
    return TextField(max_length=255, single_line=True, required=False)


def provider_field() -> OneOfField:
    return OneOfField(choices=ProviderName.values, required=False)


def send_errors(*, refused: ErrorAnswer, not_permitted: ErrorAnswer) -> dict[int, Any]:
    """What a send endpoint answers besides 202, for the OpenAPI document."""
    duplicate = ErrorAnswer("A job with this `idempotencyKey` exists already; no new job is created.", DuplicateRequest)
    return error_responses(
        400, 401, 403, 409, 411, 413, 415, 429, descriptions={400: refused, 403: not_permitted, 409: duplicate}
    )


EMAIL_SEND_ERRORS = send_errors(
    refused=ErrorAnswer(
        "The body breaks a rule (the message names the field) or is not a JSON object; the sender, or a provider, "
        "is not one the account may use; or the API key was sent in both headers.",
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
        "The body breaks a rule (the message names the field), is not a JSON object, or the API key was sent in "
        "both headers.",
        *BODY_REFUSALS,
    ),
    not_permitted=ErrorAnswer(
        "The account is inactive, or its monthly quota is used up.", AccountInactive, QuotaExceeded
    ),
)
JOB_NOT_FOUND = ErrorAnswer("No such job among the caller's jobs.", JobNotFound)

# The two places each job operation is served, one view class serving both: to API clients, by key, under
# /api/v1/notifications/; and to the account holder, by the dashboard's session or a key, under /api/v1/user/.
API_CLIENT = Mount(access=ApiKeyView, operation_prefix="notifications")
ACCOUNT_HOLDER = Mount(
    access=AccountHolderView,
    operation_prefix="user",
    summary_note=" (dashboard session or API key)",
    error_descriptions=SESSION_ERROR_DESCRIPTIONS,
)
# The job operations, by their operation ids within a mount; a response's links lead to them.
JOB_STATUS, JOB_LIST, JOB_RETRY, JOB_CANCEL = "jobs_retrieve", "jobs_list", "jobs_retry_create", "jobs_cancel_create"
# Where a response names a job, as runtime expressions.
ACCEPTED_OR_REQUEUED_JOB = "$response.body#/data/jobId"
SHOWN_JOB = "$response.body#/data/id"
NEWEST_JOB_ON_PAGE = "$response.body#/data/data/0/id"


def job_status_link(operation_id: str, job_id: str) -> Link:
    return Link("GetJobStatus", operation_id, "The job's status and its delivery attempts.", {"job_id": job_id})


def job_retry_link(operation_id: str, job_id: str) -> Link:
    return Link("RetryJob", operation_id, "Re-queue the job once it has failed.", {"job_id": job_id})


def job_cancel_link(operation_id: str, job_id: str) -> Link:
    return Link("CancelJob", operation_id, "Cancel the job while it is pending.", {"job_id": job_id})


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


# The pairing of `provider` and `fallback` that validate() checks: a fallback needs a provider, another one.
ROUTING_PAIR_RULES = {
    "dependentSchemas": {
        "fallback": {
            "required": ["provider"],
            "anyOf": [
                {
                    "properties": {
                        "provider": {"const": name},
                        "fallback": {"enum": [other for other in ProviderName.values if other != name]},
                    }
                }
                for name in ProviderName.values
            ],
        }
    }
}


class SendEmailView(SendView):
    @extend_schema_serializer(component_name="EmailRequest")
    class InputSerializer(RequestSerializer):
        body_rules = ROUTING_PAIR_RULES

        to = EmailAddressField()
        subject = TextField(max_length=SUBJECT_MAX_LENGTH, single_line=True)
        body = TextField(max_length=EMAIL_BODY_MAX_LENGTH)
        priority = priority_field()
        idempotencyKey = idempotency_key_field()
        provider = provider_field()
        fallback = provider_field()
        sendAt = SendAtField()

        def get_fields(self) -> dict[str, serializers.Field]:
            # Declared here because "from" is a Python keyword; placed after "body" so
            # errors are reported in the order docs/rules.md lists the fields.
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

    @extend_schema(
        summary="Queue an email",
        description=(
            "Validates the email and queues it as a job. The 202 answer confirms acceptance, not delivery: "
            "follow the job with Get job status.\n\n"
            "On the Free plan the sender is always the platform's `noreply` address, and `priority`, "
            "`provider` and `fallback` are not allowed. On a paid plan the account needs a provider key and "
            "a verified sending domain; `from` must be on that domain. `provider` forces the email through "
            "that provider only, `fallback` (which requires `provider`) is tried if it fails.\n\n"
            f"{SEND_AT_TEXT}"
        ),
        request=InputSerializer,
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
            subject=data["subject"],
            body=data["body"],
            sender=data.get("from"),
            priority=data.get("priority"),
            provider=data.get("provider"),
            fallback=data.get("fallback"),
            idempotency_key=data.get("idempotencyKey"),
            send_at=data.get("sendAt"),
            test=test,
        )


class SendWebhookView(SendView):
    @extend_schema_serializer(component_name="WebhookRequest")
    class InputSerializer(RequestSerializer):
        url = HttpsUrlField(refused=is_refused_target)
        payload = JsonObjectField()
        method = OneOfField(choices=WEBHOOK_METHODS, required=False)
        headers = HeadersField(required=False)
        priority = priority_field()
        idempotencyKey = idempotency_key_field()
        sendAt = SendAtField()

        def validate_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
            if len(json_bytes(payload)) > WEBHOOK_PAYLOAD_MAX_BYTES:
                raise serializers.ValidationError("payload must be at most 10kb")
            return payload

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
        request=InputSerializer,
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
        f"`items` is not a list of 1 to {BATCH_MAX_ITEMS} entries, the body is not a JSON object, or the API key was "
        "sent in both headers.",
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
            return ValidationFailed(reason=first_message(refusal.detail))
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


class JobDetailView(MountedView):
    """One of the caller's jobs in full; another account's job is 404 like a missing one."""

    key_scopes = {"GET": READS}
    key_modes = {"GET": ANY_MODE}

    openapi = OperationText(
        operation=JOB_STATUS,
        summary={API_CLIENT: "Get job status", ACCOUNT_HOLDER: "Get one of your jobs"},
        description={
            API_CLIENT: "One of the caller's jobs with all its fields and one delivery log per attempt.",
            ACCOUNT_HOLDER: "One of the account's jobs with all its fields and one delivery log per attempt.",
        },
        responses={200: JobDetailSchema},
        errors=(400, 401, 403, 404, 429),
        error_descriptions={404: JOB_NOT_FOUND},
        links=(job_retry_link(JOB_RETRY, SHOWN_JOB), job_cancel_link(JOB_CANCEL, SHOWN_JOB)),
    )

    def get(self, request: Request, job_id: str) -> Response:
        job = job_get(account=request_account(request), job_id=job_id, test=request_in_test_mode(request))
        shown = {SECRET_HEADERS_SHOWN: sees_secret_headers(request)}
        return Response(JobDetailSerializer(job, context=shown).data)


def sees_secret_headers(request: Request) -> bool:
    """Whether the caller sees a webhook's secret header values: the holder's session and a key that may send do; a
    read key sees them masked (docs/rules.md, "Webhooks")."""
    return not isinstance(request.auth, ApiKey) or request.auth.scope in SENDS


# The longest DNS name.
HOST_MAX_LENGTH = 253


class JobListQuery(PageQuery):
    type = OneOfField(choices=JobType.values, required=False)
    status = OneOfField(choices=JobStatus.values, required=False)
    to = EmailAddressField(required=False)
    host = TextField(max_length=HOST_MAX_LENGTH, single_line=True, required=False)

    def filters(self) -> JobFilters:
        return JobFilters(**{name: self.validated_data.get(name) for name in ("type", "status", "to", "host")})


JOB_LIST_PARAMETERS = (
    *page_parameters("Jobs"),
    OpenApiParameter("type", str, enum=JobType.values, description="Only jobs of this type"),
    OpenApiParameter("status", str, enum=JobStatus.values, description="Only jobs in this status"),
    OpenApiParameter("to", EMAIL_SCHEMA, description="Only emails to this address (compared without case)"),
    OpenApiParameter(
        "host",
        text_schema(max_length=HOST_MAX_LENGTH, single_line=True),
        description="Only webhooks to URLs on this host (compared without case), e.g. `hooks.example.com`",
    ),
)


class JobListView(MountedView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": ANY_MODE}
    openapi = OperationText(
        operation=JOB_LIST,
        summary={API_CLIENT: "List jobs, newest first", ACCOUNT_HOLDER: "List your jobs, newest first"},
        description=(
            "A page of the caller's jobs, newest first, without payloads or delivery logs, each with its "
            "`destination`: an email's recipient or a webhook URL's host, in lower case. Filters combine: `to` "
            "finds every email to one address, `host` every webhook to one host."
        ),
        parameters=JOB_LIST_PARAMETERS,
        responses={200: JobPageSchema},
        errors=(400, 401, 403, 429),
        error_descriptions={400: QUERY_REFUSED},
        links=(
            job_status_link(JOB_STATUS, NEWEST_JOB_ON_PAGE),
            job_retry_link(JOB_RETRY, NEWEST_JOB_ON_PAGE),
            job_cancel_link(JOB_CANCEL, NEWEST_JOB_ON_PAGE),
        ),
    )

    def get(self, request: Request) -> Response:
        query = JobListQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        page = Page.asked(query.validated_data)
        jobs, total = job_list(
            account=request_account(request),
            page=page.number,
            limit=page.limit,
            filters=query.filters(),
            test=request_in_test_mode(request),
        )
        return Response(JobPageSerializer({"data": jobs, "pagination": page.pagination(total)}).data)


def _job_moved(component: str) -> Any:
    """The answer of an operation that moves a job to another status: its id, that status, and a sentence."""
    fields = {"jobId": serializers.CharField(), "status": job_enum_field("status"), "message": serializers.CharField()}
    return inline_serializer(component, fields)


def _job_moved_answer(job: Job, message: str) -> Response:
    return Response({"jobId": str(job.id), "status": job.status, "message": message})


JOB_REQUEUED = _job_moved("JobRequeued")
JOB_CANCELLED = _job_moved("JobCancelled")


class JobRetryView(MountedView):
    key_scopes = {"POST": CHANGES}
    key_modes = {"POST": ANY_MODE}
    openapi = OperationText(
        operation=JOB_RETRY,
        summary={API_CLIENT: "Re-queue a failed job", ACCOUNT_HOLDER: "Re-queue one of your failed jobs"},
        description=(
            "Puts a job in `failed` status back in the queue: its attempts start again, its delivery logs stay, "
            "and an email keeps its `provider` and `fallback`."
        ),
        responses={200: JOB_REQUEUED},
        errors=(400, 401, 403, 404, 411, 429),
        error_descriptions={
            400: ErrorAnswer(
                "A paid account's failed email cannot be retried before a provider key is added, "
                "or the API key was sent in both headers.",
                ApiKeyInBothHeaders,
                RetryNeedsProviderKey,
            ),
            404: ErrorAnswer("No such job among the caller's jobs, or it is not in `failed` status.", JobNotRetryable),
        },
        error_additions={
            403: ErrorAnswer(
                "Or the job took no unit of the monthly quota when it was accepted, and none is left for its retry.",
                QuotaExceeded,
            )
        },
        links=(
            job_status_link(JOB_STATUS, ACCEPTED_OR_REQUEUED_JOB),
            job_cancel_link(JOB_CANCEL, ACCEPTED_OR_REQUEUED_JOB),
        ),
    )

    def post(self, request: Request, job_id: str) -> Response:
        job = job_retry(account=request_account(request), job_id=job_id, test=request_in_test_mode(request))
        return _job_moved_answer(job, REQUEUED_MESSAGE)


class JobCancelView(MountedView):
    key_scopes = {"POST": SENDS}
    key_modes = {"POST": ANY_MODE}
    openapi = OperationText(
        operation=JOB_CANCEL,
        summary={API_CLIENT: "Cancel a pending job", ACCOUNT_HOLDER: "Cancel one of your pending jobs"},
        description=(
            "Stops a job in `pending` status (queued, and not yet taken by a worker) before any attempt: it becomes "
            "`failed` with `errorMessage` `Cancelled`, spends no attempt, and can be re-queued with Retry Job. A job "
            "a worker has taken, or that has finished, cannot be cancelled."
        ),
        responses={200: JOB_CANCELLED},
        errors=(400, 401, 403, 404, 411, 429),
        error_descriptions={
            404: ErrorAnswer(
                "No such job among the caller's jobs, or it is not in `pending` status.", JobNotCancellable
            )
        },
        links=(
            job_status_link(JOB_STATUS, ACCEPTED_OR_REQUEUED_JOB),
            job_retry_link(JOB_RETRY, ACCEPTED_OR_REQUEUED_JOB),
        ),
    )

    def post(self, request: Request, job_id: str) -> Response:
        job = job_cancel(account=request_account(request), job_id=job_id, test=request_in_test_mode(request))
        return _job_moved_answer(job, CANCELLED_MESSAGE)


DASHBOARD_PERIODS = [7, 30, 90]


class DashboardStatsView(AccountHolderView):
    key_scopes = {"GET": READS}
    key_modes = {"GET": LIVE_ONLY}

    class QuerySerializer(RequestSerializer):
        days = PositiveIntegerParamField(required=False)

        def validate_days(self, days: int) -> int:
            if days not in DASHBOARD_PERIODS:
                raise serializers.ValidationError("days must be one of 7, 30, 90")
            return days

    @extend_schema(
        summary="Completed and failed jobs per day (dashboard session or API key)",
        description=(
            "One entry per day of the period, oldest first, today (UTC) last: the jobs that completed and "
            "the jobs that failed for good that day; and the period's totals."
        ),
        parameters=[
            OpenApiParameter("days", int, enum=DASHBOARD_PERIODS, description="The period in days", default=30)
        ],
        responses={
            200: inline_serializer(
                "DashboardStats",
                {
                    "days": inline_serializer(
                        "DayOutcomes",
                        {
                            "date": serializers.DateField(),
                            "completed": serializers.IntegerField(),
                            "failed": serializers.IntegerField(),
                        },
                        many=True,
                    ),
                    "totals": inline_serializer(
                        "OutcomeTotals", {"completed": serializers.IntegerField(), "failed": serializers.IntegerField()}
                    ),
                },
            ),
            **error_responses(400, 401, 403, 429, descriptions={**SESSION_ERROR_DESCRIPTIONS, 400: QUERY_REFUSED}),
        },
    )
    def get(self, request: Request) -> Response:
        query = self.QuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        outcomes = daily_outcomes(account=request_account(request), days=query.validated_data.get("days", 30))
        return Response(
            {
                "days": [
                    {"date": day.day.isoformat(), "completed": day.completed, "failed": day.failed} for day in outcomes
                ],
                "totals": {
                    "completed": sum(day.completed for day in outcomes),
                    "failed": sum(day.failed for day in outcomes),
                },
            }
        )
