"""The job reads and changes, each served on two mounts: API clients' and the account holder's."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiParameter,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.access import ANY_MODE, CHANGES, READS, SENDS, AccountHolderView, ApiKeyView
from accounts.authentication import request_account, request_in_test_mode
from accounts.models import ApiKey
from core.api.exceptions import ApiKeyInBothHeaders
from core.api.fields import (
    EMAIL_SCHEMA,
    TAG_SCHEMA,
    EmailAddressField,
    OneOfField,
    TagField,
    TextField,
    text_schema,
)
from core.api.pages import PageQuery, page_parameters
from core.api.schema import (
    QUERY_REFUSED,
    SESSION_ERROR_DESCRIPTIONS,
    ErrorAnswer,
    Link,
    OperationText,
)
from core.api.views import Mount, MountedView
from core.errors import (
    JobNotCancellable,
    JobNotFound,
    JobNotRetryable,
    QuotaExceeded,
    RetryNeedsProviderKey,
)
from notifications.models import Job, JobStatus, JobType
from notifications.selectors import JobFilters, job_get, job_list
from notifications.serializers import (
    SECRET_HEADERS_SHOWN,
    JobDetailSchema,
    JobDetailSerializer,
    JobPageSchema,
    JobPageSerializer,
    job_enum_field,
)
from notifications.services import (
    CANCELLED_MESSAGE,
    REQUEUED_MESSAGE,
    job_cancel,
    job_retry,
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
    tag = TagField(required=False)

    def filters(self) -> JobFilters:
        return JobFilters(**{name: self.validated_data.get(name) for name in ("type", "status", "to", "host", "tag")})


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
    OpenApiParameter("tag", TAG_SCHEMA, description="Only emails sent with this tag among their `tags` (case counts)"),
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
            "finds every email to one address, `host` every webhook to one host, `tag` every email sent with one tag."
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
        query = JobListQuery.of(request)
        page = query.asked_page
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
