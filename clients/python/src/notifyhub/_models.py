"""What the API answers, as frozen dataclasses: one per shape of its answers' ``data``.

Field names are the API's in snake case (``jobId`` is ``job_id``), read by ``_decode.py``. A field the API adds later
is ignored until the client knows it; the enum-like values are typed as ``Literal`` with the values of today.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

JobStatus = Literal["pending", "processing", "completed", "failed"]
JobType = Literal["email", "webhook"]
Priority = Literal[1, 5, 10]
Provider = Literal["SENDGRID", "RESEND", "POSTMARK"]
WebhookMethod = Literal["POST", "PUT", "PATCH", "DELETE"]
SuppressionReason = Literal["HARD_BOUNCE", "SPAM_REPORT", "UNSUBSCRIBED", "MANUAL"]
# Why an app's endpoint is disabled: by its holder, answered 410 Gone, or every delivery failing for days.
EndpointDisabledReason = Literal["holder", "gone", "failing"]
EventType = Literal[
    "job.completed",
    "job.failed",
    "email.delivered",
    "email.opened",
    "email.clicked",
    "email.bounced",
    "email.spam_report",
    "email.unsubscribed",
    "email.deferred",
    "suppression.created",
    "endpoint.failing",
    "endpoint.disabled",
]

FINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed"})


@dataclass(frozen=True, kw_only=True)
class AcceptedJob:
    """A send's answer: the job NotifyHub stored and delivers in the background. ``test``: sent with a test key."""

    job_id: str
    status: JobStatus
    type: JobType
    created_at: datetime
    test: bool = False


@dataclass(frozen=True, kw_only=True)
class RefusedItem:
    """A batch item NotifyHub refused: the status, message (``error``) and code its single send would answer."""

    status: int
    error: str
    code: str


@dataclass(frozen=True, kw_only=True)
class BatchResult:
    """A batch's answer: one slot per item, in the request's order (docs/rules.md, "Batches")."""

    items: tuple[AcceptedJob | RefusedItem, ...]


@dataclass(frozen=True, kw_only=True)
class JobSummary:
    """A job as the jobs list shows it. ``destination``: an email's recipient or a webhook URL's host."""

    id: str
    type: JobType
    status: JobStatus
    destination: str
    priority: Priority
    attempts: int
    error_message: str | None
    created_at: datetime
    completed_at: datetime | None
    scheduled_for: datetime | None
    test: bool = False


@dataclass(frozen=True, kw_only=True)
class DeliveryLog:
    """One delivery attempt of a job."""

    id: str
    attempt: int
    status: str
    used_provider: str | None
    error_message: str | None
    response_status: int | None
    duration_ms: int | None
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class EmailEvent:
    """What an email provider reported about the message: delivered, opened, bounced..."""

    type: str
    provider: Provider
    occurred_at: datetime
    recipient: str


@dataclass(frozen=True, kw_only=True)
class SkippedRecipient:
    """A ``cc`` or ``bcc`` address left out of the email: it is on the account's suppression list for ``reason``."""

    email: str
    reason: SuppressionReason


@dataclass(frozen=True, kw_only=True)
class Job(JobSummary):
    """A job with what it sends, every delivery attempt and the providers' events. ``skipped_recipients``: an
    email's suppressed ``cc``/``bcc`` addresses, left out of it."""

    payload: dict[str, Any]
    max_attempts: int
    started_at: datetime | None
    next_attempt_at: datetime | None
    delivery_logs: tuple[DeliveryLog, ...]
    events: tuple[EmailEvent, ...]
    skipped_recipients: tuple[SkippedRecipient, ...] = ()


@dataclass(frozen=True, kw_only=True)
class JobChange:
    """Retry Job's or Cancel Job's answer: the job's new status and what happened."""

    job_id: str
    status: JobStatus
    message: str


@dataclass(frozen=True, kw_only=True)
class Suppression:
    """An address the account's email never goes to, or (``topic``) the emails of that topic only; ``provider`` and
    ``job_id`` say whose event put it there."""

    email: str
    reason: SuppressionReason
    provider: Provider | None
    job_id: str | None
    # None for every email.
    topic: str | None
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class SuppressionRemoved:
    email: str
    message: str


@dataclass(frozen=True, kw_only=True)
class EventEndpoint:
    """A URL the account's events are pushed to (docs/event-endpoints.md)."""

    id: str
    url: str
    events: tuple[EventType, ...]
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class EventEndpointDeleted:
    id: str
    message: str


@dataclass(frozen=True, kw_only=True)
class EventDelivery:
    """One event sent, or being sent, to an endpoint, with its last attempt's outcome."""

    id: str
    event_id: str
    type: EventType
    status: JobStatus
    attempts: int
    response_status: int | None
    duration_ms: int | None
    last_error: str | None
    created_at: datetime
    next_attempt_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class Event:
    """An event endpoint's delivery body: ``data`` is the job, provider report or entry the event is about."""

    id: str
    type: EventType
    created_at: datetime
    data: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ProviderStatus:
    provider: str
    verified: bool
    error: str | None


@dataclass(frozen=True, kw_only=True)
class ProviderWarning:
    provider: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Domain:
    """The account's sender domain: the DNS records each provider needs and whether each has verified it."""

    domain: str
    sending_domain: str
    status: str
    records: tuple[dict[str, Any], ...]
    providers: tuple[ProviderStatus, ...]
    warnings: tuple[ProviderWarning, ...]
    created_at: datetime
    verified_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class DomainDeleted:
    deleted: bool
    warnings: tuple[ProviderWarning, ...]


@dataclass(frozen=True, kw_only=True)
class Usage:
    """This billing cycle's quota: ``limit`` is None where the plan counts no quota."""

    plan: Literal["free", "indie", "startup"]
    used: int
    limit: int | None
    period_start: date
    resets_on: date


@dataclass(frozen=True, kw_only=True)
class DayOutcomes:
    date: date
    completed: int
    failed: int


@dataclass(frozen=True, kw_only=True)
class OutcomeTotals:
    completed: int
    failed: int


@dataclass(frozen=True, kw_only=True)
class DashboardStats:
    """The live jobs completed and failed each day, as the dashboard's chart shows them."""

    days: tuple[DayOutcomes, ...]
    totals: OutcomeTotals


@dataclass(frozen=True, kw_only=True)
class AuditApiKey:
    """The API key a change was made with: its name, and its ``mode`` (``live`` or ``test``)."""

    name: str
    mode: str


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One change to the account's settings: what (``action``), who, with which API key (None for the dashboard,
    staff or an operator), to what, from where (docs/rules.md, "Audit log")."""

    action: str
    actor: str
    target: str
    ip: str | None
    api_key: AuditApiKey | None
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class Pong:
    message: str
    timestamp: datetime


@dataclass(frozen=True, kw_only=True)
class TemplateSummary:
    """A template as the list shows it, without its parts; ``version``: its current one (docs/templates.md)."""

    id: str
    alias: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class Template:
    """A template at one of its versions: its parts, the ``variables`` they read, and when that version was saved."""

    id: str
    alias: str
    name: str
    version: int
    subject: str
    html: str
    text: str | None
    variables: tuple[str, ...]
    created_at: datetime
    version_created_at: datetime


@dataclass(frozen=True, kw_only=True)
class TemplateVersion:
    version: int
    variables: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class TemplateDeleted:
    id: str
    alias: str
    message: str


@dataclass(frozen=True, kw_only=True)
class RenderedTemplate:
    """A template rendered as a send would send it; nothing was sent."""

    subject: str
    html: str
    text: str


@dataclass(frozen=True, kw_only=True)
class App:
    """One of the account's customers, with the account's own ``uid`` for it (docs/customer-webhooks.md)."""

    id: str
    uid: str | None
    name: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class AppDeleted:
    id: str
    uid: str | None
    message: str


@dataclass(frozen=True, kw_only=True)
class AppEndpoint:
    """An HTTPS URL of an app's customer, signed with a secret of its own; ``event_types`` empty: every type."""

    id: str
    url: str
    event_types: tuple[str, ...]
    description: str
    rate_limit: int | None
    disabled: bool
    disabled_reason: EndpointDisabledReason | None  # None while enabled
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class AppEndpointDeleted:
    id: str
    message: str


@dataclass(frozen=True, kw_only=True)
class EndpointSecret:
    """``whsec_`` and base64: the key the Standard Webhooks libraries verify an endpoint's deliveries with."""

    secret: str


@dataclass(frozen=True, kw_only=True)
class AcceptedDelivery:
    """One delivery of a sent message: the endpoint it goes to and its webhook job (``jobs.get`` follows it)."""

    endpoint_id: str
    job_id: str


@dataclass(frozen=True, kw_only=True)
class AcceptedMessage:
    """A message's answer: one delivery per enabled endpoint of the app taking its type, none when no endpoint does.
    ``test``: sent with a test key, its deliveries send nothing."""

    message_id: str
    event_type: str
    created_at: datetime
    deliveries: tuple[AcceptedDelivery, ...]
    test: bool = False


@dataclass(frozen=True, kw_only=True)
class AppMessage:
    """A message as the app's list shows it, without its payload."""

    id: str
    event_type: str
    created_at: datetime
    test: bool = False


@dataclass(frozen=True, kw_only=True)
class MessageDelivery:
    """A message's delivery to one endpoint, as its webhook job stands now (``jobs.get`` shows each attempt)."""

    endpoint_id: str
    job_id: str
    status: JobStatus
    attempts: int
    max_attempts: int
    error_message: str | None
    next_attempt_at: datetime | None
    completed_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class AppMessageDetail(AppMessage):
    """A message with its payload and each of its deliveries."""

    payload: dict[str, Any]
    deliveries: tuple[MessageDelivery, ...]


@dataclass(frozen=True, kw_only=True)
class EndpointRecovered:
    """How many of the endpoint's failed deliveries a recover queued again."""

    requeued: int


@dataclass(frozen=True, kw_only=True)
class PortalLink:
    """A link to an app's consumer portal, for that app's customer: whoever holds it manages the app's endpoints
    until ``expires_at``, so hand it over as you would a password."""

    url: str
    expires_at: datetime


@dataclass(frozen=True, kw_only=True)
class PortalRevoked:
    """Every consumer portal link of an app made up to ``revoked_at``, and every session opened with one, is ended."""

    revoked_at: datetime
