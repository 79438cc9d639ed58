from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, ParamSpec

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from accounts.models import Account
from accounts.selectors import signing_secrets_get
from accounts.services import usage_consume
from core.api.envelope import iso_utc
from core.crypto import encrypt
from core.errors import (
    EmailNotSent,
    EmailUnconfirmedForTest,
    JobNotCancellable,
    JobNotRetryable,
    RetryNeedsProviderKey,
    UrlNotPublic,
)
from core.public_url import public_url
from email_templates.selectors import template_rendered_for_send
from notifications.attachments import attachment_rows, payload_entries
from notifications.delivery.email import email_send
from notifications.delivery.http import is_refused_target, split_credentials
from notifications.delivery.outcome import AttemptOutcome
from notifications.delivery.webhook import build_headers
from notifications.delivery.webhook import send as send_webhook
from notifications.delivery.wire import json_bytes
from notifications.destination import job_destination
from notifications.engine import store
from notifications.engine.app_endpoints import turn_reserved
from notifications.engine.queue import dispatch_soon, job_enqueue, jobs_enqueue_soon
from notifications.engine.transitions import NextState
from notifications.models import SKIPPED_RECIPIENTS, DestinationHealth, Job, JobStatus, JobType
from notifications.observability import job_accepted, job_failed_on_arrival
from notifications.outcomes import finished_jobs_announce_soon
from notifications.quota import counts_against_quota
from notifications.routing import (
    account_email_route,
    email_needs_provider_key,
    email_routing_check,
    platform_routes,
    platform_sender,
)
from notifications.secret_headers import split_secret_headers
from notifications.selectors import FINISHED, failed_jobs, finished_jobs, parse_job_id
from providers.base import EmailAttachment, OutgoingEmail, build_message
from providers.failover import send_with_failover
from suppressions.selectors import ListedAddresses, suppression_reason, suppression_reasons
from suppressions.services import suppressed_message
from suppressions.unsubscribe import unsubscribe_url

REQUEUED_MESSAGE = "Job has been re-queued for processing"
CANCELLED_MESSAGE = "Job has been cancelled"
# A cancelled job's errorMessage.
CANCELLED_ERROR = "Cancelled"
NOT_RETRYABLE_MESSAGE = JobNotRetryable.message

P = ParamSpec("P")


def _requeue_time() -> datetime:
    """When the sweeper should re-send a queued job's task, in case the broker lost it."""
    return timezone.now() + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)


def platform_email_send(*, to: str, subject: str, html: str) -> None:
    """Mail from NotifyHub itself (sign-up confirmations, password resets), sent now.

    Through the platform's providers with failover, or Django's email backend when there are
    none (files in var/outbox/ on a local run), as the Free plan's emails go.
    """
    email = OutgoingEmail(job_id=None, sender=platform_sender(), to=to, subject=subject, html=html)
    routes = platform_routes()
    if not routes:
        try:
            build_message(email).send()
        except OSError as error:
            raise EmailNotSent(reason=error.strerror or str(error)) from None
        return
    result = send_with_failover(email, routes)
    if not result.sent:
        raise EmailNotSent(reason=result.error_message)


def failing_destination_alert(*, health_id: int) -> None:
    """Emails the account holder that their webhooks to a destination keep failing (docs/event-endpoints.md)."""
    health = DestinationHealth.objects.select_related("account__user").filter(pk=health_id).first()
    if health is None or health.failing_since is None:
        return  # the account went, or a success ended the streak before the email went out
    origin = escape(health.origin)
    html = (
        f"<p>The last {health.consecutive_failures} webhook deliveries of your NotifyHub account to "
        f"<strong>{origin}</strong> failed, the latest with: {escape(health.last_error)}.</p>"
        f"<p>Failing since {iso_utc(health.failing_since)}. NotifyHub still tries each webhook as usual; "
        f'<a href="{escape(public_url(reverse("endpoints")))}">your endpoints page</a> shows how '
        "each destination is doing. You get this at most once a day for one destination.</p>"
    )
    platform_email_send(to=health.account.user.email, subject=f"Webhooks to {health.origin} are failing", html=html)


# The holder hears of its endpoints that NotifyHub disabled at most this often, however many there are.
DISABLED_ALERT_INTERVAL = timedelta(days=1)


def disabled_endpoint_alert(*, endpoint_id: str) -> None:
    """Emails the account holder that NotifyHub disabled one of its apps' endpoints, at most once a day an account
    (docs/customer-webhooks.md, "Disabling"); an endpoint enabled again or deleted meanwhile is not told of."""
    disabled = (
        store.Endpoint._default_manager.filter(id=endpoint_id, disabled=True)
        .values("url", "disabled_reason", "failing_since", "app__name", "app__account_id", "app__account__user__email")
        .first()
    )
    if disabled is None:
        return
    once_a_day = f"disabled-endpoint-alert:{disabled['app__account_id']}"
    if not cache.add(once_a_day, True, timeout=DISABLED_ALERT_INTERVAL.total_seconds()):
        return
    since = disabled["failing_since"]
    failing = disabled["disabled_reason"] == "failing" and since
    why = f"every delivery to it has failed since {iso_utc(since)}" if failing else "it answered 410 Gone"
    html = (
        f"<p>NotifyHub disabled the endpoint <strong>{escape(disabled['url'])}</strong> of your app "
        f"<strong>{escape(disabled['app__name'])}</strong>: {why}. It receives no messages until it is enabled "
        "again; its failed deliveries can then be recovered.</p>"
        f'<p><a href="{escape(public_url(reverse("dashboard")))}">Your dashboard</a>. You get this at most once a day; '
        "the endpoint.disabled event tells each one.</p>"
    )
    subject = f"Webhook endpoint {disabled['url']} disabled"
    platform_email_send(to=disabled["app__account__user__email"], subject=subject, html=html)


def email_job_new(
    *,
    account: Account,
    to: str,
    subject: str | None = None,
    body: str | None = None,
    sender: str | None = None,
    priority: int | None = None,
    provider: str | None = None,
    fallback: str | None = None,
    idempotency_key: str | None = None,
    send_at: datetime | None = None,
    test: bool = False,
    cc: list[str] | None = None,
    bcc: list[str] | None = None,
    reply_to: str | list[str] | None = None,
    text: str | None = None,
    headers: dict[str, str] | None = None,
    tags: list[str] | None = None,
    metadata: dict[str, str] | None = None,
    attachments: Sequence[EmailAttachment] = (),
    template: str | None = None,
    template_version: int | None = None,
    data: dict[str, Any] | None = None,
    topic: str | None = None,
) -> Job:
    """An email job that the account's plan and setup allow, not stored yet; raises the DomainError of the rule
    it breaks (notifications/routing.py). ``test``: sent with a test key (docs/rules.md, "Test mode"). The rich
    email's fields and its ``topic`` are stored as sent, each under the API's name and only when sent (docs/rules.md,
    "Rich email"). With a ``template`` (in place of ``subject`` and ``body``), the message is the template rendered
    now, at ``template_version`` or its newest, with ``data``: the job keeps the rendered parts, which every attempt
    sends, beside what named them (docs/templates.md, "Sending with a template")."""
    email_routing_check(account=account, sender=sender, priority=priority, provider=provider, fallback=fallback)
    rendered_from: dict[str, Any] = {}
    if template is not None:
        made = template_rendered_for_send(
            account=account, template=template, version=template_version, data=_template_data(account, to, topic, data)
        )
        subject, body = made.rendered.subject, made.rendered.html
        text = text if text is not None else made.rendered.text
        rendered_from = {"template": template, "templateVersion": made.version, "data": data or {}}
    payload: dict[str, Any] = {"to": to, "subject": subject, "body": body}
    if sender is not None:
        payload["from"] = sender
    rich = {
        "cc": cc,
        "bcc": bcc,
        "replyTo": reply_to,
        "text": text,
        "headers": headers,
        "tags": tags,
        "metadata": metadata,
        "topic": topic,
    }
    payload.update((name, value) for name, value in rich.items() if value is not None)
    if attachments:
        payload["attachments"] = payload_entries(attachments)
    payload.update(rendered_from)
    job = _new_job(
        account=account,
        type=JobType.EMAIL,
        payload=payload,
        priority=priority,
        idempotency_key=idempotency_key,
        provider=provider,
        fallback=fallback,
        send_at=send_at,
        test=test,
    )
    if attachments:
        job.new_attachments = attachment_rows(job, attachments)
    job.topic = topic
    return job


def _template_data(account: Account, to: str, topic: str | None, data: dict[str, Any] | None) -> dict[str, Any]:
    """What a template renders with: the send's ``data`` and, for an email with a topic, its recipient's
    ``unsubscribe_url`` (docs/templates.md, "Unsubscribe links"), which the payload does not keep."""
    if topic is None:
        return data or {}
    return {**(data or {}), "unsubscribe_url": unsubscribe_url(account_id=account.pk, email=to, topic=topic)}


def webhook_job_new(
    *,
    account: Account,
    url: str,
    payload: dict[str, Any],
    method: str = "POST",
    headers: dict[str, str] | None = None,
    priority: int | None = None,
    idempotency_key: str | None = None,
    send_at: datetime | None = None,
    test: bool = False,
) -> Job:
    """A webhook job, its URL's credentials and its secret headers encrypted apart, not stored yet."""
    masked_url, credentials = split_credentials(url)
    stored_headers, secret_headers = split_secret_headers(headers or {})
    return _new_job(
        account=account,
        type=JobType.WEBHOOK,
        payload={"url": masked_url, "method": method, "headers": stored_headers, "payload": payload},
        priority=priority,
        idempotency_key=idempotency_key,
        url_credentials=encrypt(credentials) if credentials else None,
        secret_headers=secret_headers,
        send_at=send_at,
        test=test,
    )


def message_delivery_new(
    *,
    account: Account,
    message_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    payload: dict[str, Any],
    url_credentials: str | None,
    max_attempts: int,
    rate_limit: int | None,
    test: bool,
) -> Job:
    """A message's delivery to one of its app's endpoints, a webhook job not stored yet (docs/customer-webhooks.md,
    "Deliveries are webhook jobs"): ``payload`` holds the endpoint's URL masked, as the endpoint keeps it, and
    ``url_credentials`` its credentials, encrypted; to an endpoint with a ``rate_limit``, it is given its turn."""
    job = _new_job(
        account=account,
        type=JobType.WEBHOOK,
        payload=payload,
        priority=None,
        idempotency_key=None,
        url_credentials=url_credentials,
        test=test,
    )
    job.message_id, job.endpoint_id, job.max_attempts = message_id, endpoint_id, max_attempts
    turn_reserved(job, rate_limit=rate_limit)
    return job


def jobs_store_together(
    jobs: Sequence[Job],
    *,
    arrivals: Sequence[store.ArrivalFailure] = (),
    tasks_at_commit: bool = False,
    savepoint: bool = True,
) -> None:
    """Stores new jobs of one account and mode, a batch's or a message's deliveries (docs/rules.md, "Batches"): one
    multi-row INSERT with the quota's units for all of them, all or none, in the caller's transaction, ``arrivals``
    failed on arrival. Once it commits, those due now go out: with ``tasks_at_commit`` (a message's, at most
    ENDPOINTS_PER_APP) one task carries them to a worker, which publishes each job's task; stored as a single send
    is, a lost one comes back at a single send's time. Else one task asks the dispatcher to send them (a batch's
    hundred). Either way the request pays one publish. A job stored locked (a scheduled send, a delivery whose turn
    is to come) is the dispatcher's at its requeue time, and one due for it already asks for its run too. Raises the
    account's QuotaExceeded, storing nothing. ``savepoint``: as store.insert_batch takes it."""
    if not jobs:
        return
    failed = {arrival.job.id for arrival in arrivals}
    queued = [job for job in jobs if job.id not in failed]
    # The jobs share an account and a mode: what one announces, they all do.
    announced = bool(arrivals) and announces_finish(jobs[0].account, test=jobs[0].test)
    due_now = [job for job in queued if job.locked_until is None]
    now = timezone.now()
    if not tasks_at_commit:
        # Stored due at once, the dispatcher's next run finds them; a published task's job keeps the sweeper's time.
        for job in due_now:
            job.requeue_at = now
    store.insert_batch(jobs, arrivals=arrivals, announced=announced, savepoint=savepoint)
    if due_now and tasks_at_commit:
        transaction.on_commit(partial(jobs_enqueue_soon, [(job.id, job.priority) for job in due_now]))
    if any(job.requeue_at is not None and job.requeue_at <= now for job in queued):
        transaction.on_commit(dispatch_soon)
    if announced:
        transaction.on_commit(finished_jobs_announce_soon)
    for job in queued:
        job_accepted(job.type)
    for arrival in arrivals:
        job_failed_on_arrival(arrival.job)


def job_store(job: Job) -> Job:
    """Stores a new job and queues it once committed; an email to a suppressed address is stored failed on arrival
    instead, and one to a suppressed cc or bcc notes it skipped. Raises DuplicateRequest, or the account's
    QuotaExceeded, and then nothing is stored."""
    if job.type == JobType.EMAIL and (reason := _suppressions_applied(job)):
        return _job_failed_on_arrival(job, error=suppressed_message(reason))
    return _job_create(job)


def _suppressions_applied(job: Job) -> str | None:
    """Why the email job's `to` is on its account's suppression list for its topic, else None, its listed cc and bcc
    noted (recipients_suppressed): one query for all its recipients."""
    payload = job.payload
    if "cc" not in payload and "bcc" not in payload:
        # A plain email's one lookup in the unique index (docs/departures.md, "raw-sql-suppression-check").
        return suppression_reason(account_id=job.account.pk, email=payload["to"], topic=job.topic)
    listed = suppression_reasons(
        account_id=job.account.pk, emails=email_recipients(payload), topics=[job.topic] if job.topic else []
    )
    return recipients_suppressed(job, listed)


def email_recipients(payload: dict[str, Any]) -> list[str]:
    """Every address an email job's payload sends to: `to` first, then its cc and bcc."""
    return [payload["to"], *payload.get("cc", ()), *payload.get("bcc", ())]


def recipients_suppressed(job: Job, listed: ListedAddresses) -> str | None:
    """The suppression list, as ``listed`` holds it for the new email job's recipients, applied to the job for its
    topic (docs/suppressions.md): the reason its `to` is listed, which fails it on arrival; else None, and its listed
    cc and bcc noted under the payload's `skippedRecipients`, which its delivery leaves out."""
    payload = job.payload
    if reason := listed.reason(payload["to"], topic=job.topic):
        return reason
    skipped = [
        {"email": address, "reason": reason}
        for address in email_recipients(payload)[1:]
        if (reason := listed.reason(address, topic=job.topic))
    ]
    if skipped:
        payload[SKIPPED_RECIPIENTS] = skipped
    return None


def _stored(new_job: Callable[P, Job]) -> Callable[P, Job]:
    def create(*args: P.args, **kwargs: P.kwargs) -> Job:
        return job_store(new_job(*args, **kwargs))

    create.__doc__ = f"{new_job.__name__}'s job, stored with job_store."
    return create


email_job_create = _stored(email_job_new)
webhook_job_create = _stored(webhook_job_new)


def announces_finish(account: Account, *, test: bool) -> bool:
    """Whether the end of the account's job of mode ``test`` is announced to its event endpoints: a test job's never
    is (docs/rules.md, "Test mode")."""
    return account.has_event_endpoints and not test


def _new_job(
    *,
    account: Account,
    type: str,
    payload: dict[str, Any],
    priority: int | None,
    idempotency_key: str | None,
    provider: str | None = None,
    fallback: str | None = None,
    url_credentials: str | None = None,
    secret_headers: str | None = None,
    send_at: datetime | None = None,
    test: bool = False,
) -> Job:
    """The job to store; a ``send_at`` still to come makes it a scheduled send (docs/rules.md, "Scheduled sends"):
    no worker may claim it before then, and the dispatcher sends its task then."""
    scheduled_for = send_at if send_at is not None and send_at > timezone.now() else None
    job = Job(
        account=account,
        type=type,
        payload=payload,
        labels=job_labels(payload),
        destination=job_destination(type, payload),
        priority=priority or 5,
        idempotency_key=idempotency_key,
        provider=provider,
        fallback=fallback,
        url_credentials=url_credentials,
        secret_headers=secret_headers,
        scheduled_for=scheduled_for,
        locked_until=scheduled_for,
        requeue_at=scheduled_for or _requeue_time(),
        test=test,
    )
    # The store takes the unit with the row, whether the job then goes out or fails on arrival.
    job.quota_taken = counts_against_quota(job)
    return job


# What of an email's payload rides on each event of the job, job.* and email.* alike (docs/event-endpoints.md).
EVENT_LABELS = ("tags", "metadata")


def job_labels(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The job's ``tags`` and ``metadata``, those it was sent with, as its events' data carries them (Job.labels);
    None when it has neither."""
    return {key: payload[key] for key in EVENT_LABELS if payload.get(key)} or None


def _job_create(job: Job) -> Job:
    """Stores the job, spends quota and queues it once committed; a duplicate or a refusal leaves no trace."""
    store.insert(job)
    job_accepted(job.type)
    if job.scheduled_for is None:
        # Outside a transaction this sends at once; inside a caller's, when it commits.
        transaction.on_commit(partial(job_enqueue, job_id=job.id, priority=job.priority))
    return job


def _job_failed_on_arrival(job: Job, *, error: str) -> Job:
    """Stores a job that must not go out at all as failed, its quota unit taken (store.ArrivalFailure)."""
    announced = announces_finish(job.account, test=job.test)
    store.insert_failed(store.ArrivalFailure.of(job, error=error), announced=announced)
    if announced:
        transaction.on_commit(finished_jobs_announce_soon)
    job_failed_on_arrival(job)
    return job


def job_retry(*, account: Account, job_id: str, test: bool = False) -> Job:
    """Puts a failed job of the caller's mode back in the queue; its attempts start again, its logs stay. A job
    that counts and took no quota unit when it was stored takes it now, or the account's QuotaExceeded is raised
    (docs/rules.md, "Retry Job")."""
    parsed_id = parse_job_id(job_id)
    if parsed_id is None:
        raise JobNotRetryable()
    # A job's mode never changes: one of the other mode is not the caller's, whatever its status becomes.
    failed = Job.objects.filter(id=parsed_id, account=account, status=JobStatus.FAILED, test=test).only("type").first()
    if failed is None:
        raise JobNotRetryable()
    if failed.type == JobType.EMAIL and email_needs_provider_key(account):
        raise RetryNeedsProviderKey()
    job = store.requeue_failed(account=account, job_id=parsed_id, requeue_at=_requeue_time())
    if job is None:
        raise JobNotRetryable()
    transaction.on_commit(partial(job_enqueue, job_id=job.id, priority=job.priority))
    return job


def job_cancel(*, account: Account, job_id: str, test: bool = False) -> Job:
    """Stops a pending job of the caller's mode (queued, or waiting for its time) before any worker takes it: it
    fails with CANCELLED_ERROR, no attempt made, and Retry Job can queue it again (docs/rules.md, "Cancel Job")."""
    parsed_id = parse_job_id(job_id)
    cancelled = NextState.failed(attempts=0, at=timezone.now(), error=CANCELLED_ERROR)
    announced = announces_finish(account, test=test)
    job = (
        store.cancel_pending(account=account, job_id=parsed_id, test=test, cancelled=cancelled, announced=announced)
        if parsed_id
        else None
    )
    if job is None:
        raise JobNotCancellable()
    if announced:
        transaction.on_commit(finished_jobs_announce_soon)
    return job


@dataclass(frozen=True)
class RetriedBatch:
    requeued: int
    # Failed emails of a paid account without a provider key, left failed.
    skipped: int
    # Jobs that took no quota unit when stored, left failed: their account's quota could not cover them.
    over_quota: int = 0

    @property
    def handled(self) -> int:
        return self.requeued + self.skipped + self.over_quota

    def __add__(self, other: RetriedBatch) -> RetriedBatch:
        return RetriedBatch(
            self.requeued + other.requeued, self.skipped + other.skipped, self.over_quota + other.over_quota
        )


def failed_jobs_retry(
    *,
    account: Account | None = None,
    job_type: str | None = None,
    created_since: datetime | None = None,
    endpoint_id: uuid.UUID | None = None,
    test: bool | None = None,
    batch_size: int = 1000,
) -> Iterator[RetriedBatch]:
    """Re-queues failed jobs (of one account, else of every usable one; as failed_jobs picks them) with Retry Job's
    rules, a batch per transaction, each job's task published once its batch is committed; yields what each batch
    did.

    A re-queued job is no longer failed: a run stopped between batches is finished by running it again.
    """
    accounts = [account] if account else Account.objects.filter(is_active=True, deleted_at__isnull=True).order_by("id")
    for holder in accounts:
        failed = failed_jobs(
            account=holder, job_type=job_type, created_since=created_since, endpoint_id=endpoint_id, test=test
        )
        if email_needs_provider_key(holder):
            if skipped := failed.filter(type=JobType.EMAIL).count():
                yield RetriedBatch(requeued=0, skipped=skipped)
            failed = failed.filter(type=JobType.WEBHOOK)
        position: store.Position | None = None
        while batch := list(store.walk_from(failed, position).values_list("created_at", "id")[:batch_size]):
            requeued = store.requeue_failed_jobs(
                account=holder, job_ids=[job_id for _, job_id in batch], requeue_at=_requeue_time()
            )
            for job_id, priority in requeued.jobs:
                transaction.on_commit(partial(job_enqueue, job_id=job_id, priority=priority))
            yield RetriedBatch(requeued=len(requeued.jobs), skipped=0, over_quota=requeued.over_quota)
            position = batch[-1]


@dataclass(frozen=True)
class PurgedBatch:
    jobs: int
    # Rows deleted per model label, the jobs' own included.
    rows: Counter[str]


# How much of the jobs' creation a purge takes at a time (below).
PURGE_WINDOW = timedelta(days=1)


def finished_jobs_purge(*, finished_before: datetime, batch_size: int = 1000) -> Iterator[PurgedBatch]:
    """Deletes the jobs that finished (completed or failed for good) before ``finished_before``, with their delivery
    logs, attachments and provider events, a batch per transaction; yields what each batch deleted. Unfinished jobs
    stay, and so do the daily tallies (docs/job-states.md, "Daily figures").

    Oldest first, a day of creation at a time; within the day, account by account and status by status down the
    (account, status, created_at) index (a job is created before it finishes, so created_at bounds the walk and
    finished_at decides). A day's jobs of every account share the table's pages: taking days before accounts
    rewrites a page within seconds, where a whole run account by account rewrote it once per account, after each
    checkpoint as a full page in the WAL (bench/RESULTS.md, "purge"). A run stopped between batches is finished by
    running it again: what it deleted is gone, what it did not is still there.
    """
    finished = finished_jobs(finished_before=finished_before)
    streams = [
        finished.filter(account_id=account_id, status=status, created_at__lt=finished_before)
        for account_id in Account.objects.order_by("id").values_list("id", flat=True)
        for status in FINISHED
    ]
    # A stream: one account's jobs in one status. Each stream with jobs left, and when its next one was created.
    upcoming = {number: created for number, jobs in enumerate(streams) if (created := _first_created(jobs))}
    while upcoming:
        window_end = min(upcoming.values()) + PURGE_WINDOW
        for number in [number for number, created in upcoming.items() if created < window_end]:
            yield from jobs_delete_in_batches(streams[number].filter(created_at__lt=window_end), batch_size=batch_size)
            following = _first_created(streams[number].filter(created_at__gte=window_end))
            if following is None:
                del upcoming[number]
            else:
                upcoming[number] = following


def _first_created(jobs: QuerySet[Job]) -> datetime | None:
    return jobs.order_by("created_at").values_list("created_at", flat=True).first()


def jobs_delete_in_batches(jobs: QuerySet[Job], *, batch_size: int) -> Iterator[PurgedBatch]:
    """Deletes ``jobs`` oldest first, ``batch_size`` a transaction, with the rows that hang off them
    (``store.delete_batch``); yields what each batch deleted. A job another transaction holds is passed over."""
    position: store.Position | None = None
    while True:
        deleted, rows = store.delete_batch(jobs, position=position, size=batch_size)
        if not deleted:
            return
        yield PurgedBatch(jobs=len(deleted), rows=rows)
        position = deleted[-1]


LOCAL_URL_MESSAGE = UrlNotPublic.message
# A test answers while the holder's page waits: a shorter wait than a job's, and more of the answer shown.
TEST_WEBHOOK_MAX_WAIT_SECONDS = 10
TEST_WEBHOOK_EXCERPT_BYTES = 2048


@dataclass(frozen=True)
class WebhookTestResult:
    """A sample event sent to a holder's URL, as the page shows it: what went out and what came back."""

    url: str
    sent_at: datetime
    headers: dict[str, str]
    body: str
    outcome: AttemptOutcome

    @property
    def signature(self) -> str | None:
        """The signature header sent, or None when the account has no signing secret."""
        return self.headers.get("X-Webhook-Signature")


def webhook_test_send(*, account: Account, url: str) -> WebhookTestResult:
    """Sends a sample event to ``url`` now, as a job's delivery would go: the same client and
    address rules, signed with the account's secret. No job is stored and no quota is spent."""
    if is_refused_target(url):
        raise UrlNotPublic()
    sent_at = timezone.now()
    webhook_id = f"test_{uuid.uuid4().hex}"
    event = {
        "type": "notifyhub.test",
        "id": webhook_id,
        "createdAt": iso_utc(sent_at),
        "data": {"message": "A test webhook from NotifyHub: your endpoint received it."},
    }
    body = json_bytes(event)
    headers = build_headers(
        webhook_id=webhook_id,
        attempt=1,
        custom={},
        body=body,
        secrets=signing_secrets_get(account_id=account.pk),
        now=int(sent_at.timestamp()),
    )
    outcome = send_webhook(
        "POST",
        url,
        body=body,
        headers=headers,
        excerpt_bytes=TEST_WEBHOOK_EXCERPT_BYTES,
        timeout_seconds=min(settings.WEBHOOK_TIMEOUT_SECONDS, TEST_WEBHOOK_MAX_WAIT_SECONDS),
    )
    masked_url, _ = split_credentials(url)
    return WebhookTestResult(
        url=masked_url, sent_at=sent_at, headers=dict(headers), body=body.decode(), outcome=outcome
    )


@dataclass(frozen=True)
class EmailTestResult:
    """A message sent to the holder's own address, as the page shows it: where, from whom, and what came of it."""

    to: str
    sender: str
    sent_at: datetime
    outcome: AttemptOutcome


def email_test_send(*, account: Account, subject: str, html: str, text: str | None) -> EmailTestResult:
    """Sends a message to the holder's own address now, as one attempt of an email job of the account would go:
    from the account's sender, through its providers with failover (the platform's on the Free plan), and not to a
    suppressed address. No job is stored; a plan whose quota counts email (Free, through the platform's providers)
    spends a unit on it as on any email it sends (docs/dashboard.md, "The templates pages"). Raises
    EmailUnconfirmedForTest, what the route refuses (no provider key, no verified sending domain), or QuotaExceeded."""
    if not account.is_confirmed:
        # An unconfirmed address may be someone else's: no mail of the holder's making goes to it.
        raise EmailUnconfirmedForTest()
    to = account.user.email
    route = account_email_route(account)
    sent_at = timezone.now()
    reason = suppression_reason(account_id=account.pk, email=to)
    if reason is not None:
        outcome = AttemptOutcome.failure(suppressed_message(reason), retryable=False)
    else:
        if account.limits.quota_counts_email:
            usage_consume(account=account)
        email = OutgoingEmail(job_id=None, sender=route.sender, to=to, subject=subject, html=html, text=text)
        outcome = email_send(email, route)
    return EmailTestResult(to=to, sender=route.sender, sent_at=sent_at, outcome=outcome)
