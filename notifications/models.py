from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account
from core.model_fields import JSONTextField
from providers.names import ProviderName

MAX_ATTEMPTS = 3


class JobType(models.TextChoices):
    EMAIL = "email"
    WEBHOOK = "webhook"


class JobStatus(models.TextChoices):
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class Priority(models.IntegerChoices):
    HIGH = 1
    NORMAL = 5
    LOW = 10


# An email job's payload key for its cc and bcc on the suppression list, left out of its message:
# [{"email", "reason"}] (docs/suppressions.md).
SKIPPED_RECIPIENTS = "skippedRecipients"


class Job(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="jobs")
    type = models.CharField(max_length=8, choices=JobType.choices)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.PENDING)
    priority = models.PositiveSmallIntegerField(choices=Priority.choices, default=Priority.NORMAL)
    payload = JSONTextField()
    # Where the job goes, in lower case: an email's recipient or a webhook URL's host (notifications/destination.py).
    # The jobs list shows it and filters by it. The database's default lets a web process of the release before it
    # go on storing jobs while the migrations run (docs/operations.md, "Upgrading").
    destination = models.CharField(max_length=254, blank=True, default="", db_default="")
    # Forced routing of an email job (docs/rules.md, "Routing"); replayed by every retry.
    provider = models.CharField(max_length=16, choices=ProviderName.choices, null=True, blank=True)
    fallback = models.CharField(max_length=16, choices=ProviderName.choices, null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    # A webhook URL's ``user:password``, encrypted; the payload keeps the URL with ``***`` in its place.
    url_credentials = models.TextField(null=True, blank=True)
    # A webhook's secret custom headers, {name: value} as encrypted JSON; the payload keeps their names with ***
    # as values (notifications/secret_headers.py). Empty when it has none.
    secret_headers = models.TextField(null=True, blank=True)
    # An email's tags and metadata as its events carry them ({"tags", "metadata"}, those it has; null when it has
    # neither), copied from its payload when it is stored: the events' paths read these few bytes, never the
    # payload, which may be half a megabyte (docs/event-endpoints.md, "Events").
    labels = JSONTextField(null=True, blank=True)
    # An email's topic (its payload's ``topic``), copied beside it for the claim's suppression check, which reads the
    # entries for every email and for this topic without reading the payload (docs/suppressions.md, "Topics").
    topic = models.CharField(max_length=64, null=True, blank=True)
    # A message's delivery to one of its app's endpoints (docs/customer-webhooks.md): signed with the endpoint's
    # secret, paced by its rate limit and retried on MESSAGE_RETRY_DELAYS. Null for every other job. Deleting the
    # endpoint or the message deletes its deliveries.
    message = models.ForeignKey(
        "customer_webhooks.Message",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="deliveries",
        db_index=False,
    )
    endpoint = models.ForeignKey(
        "customer_webhooks.Endpoint",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="deliveries",
        db_index=False,
    )
    # Accepted with a test key (docs/rules.md, "Test mode"): its attempts send nothing, and only test keys see it.
    test = models.BooleanField(default=False, db_default=False)
    # Whether the job took its unit of the account's quota when it was stored (docs/rules.md, "Quota"): false for a
    # job that counts for nothing then (a test job, a paid plan's email) and for an email failed on arrival before
    # such sends took their unit. Retry Job takes the unit of a job that counts and took none, and sets it. The
    # database's default, for the release before while the migrations run, is what that release's sends mostly did.
    quota_taken = models.BooleanField(default=True, db_default=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=MAX_ATTEMPTS)
    # Times a worker took the job. More than attempts + 1 at a claim means workers died holding
    # the job: the attempt itself may be what kills them, so it is not retried for ever.
    claims = models.PositiveSmallIntegerField(default=0)
    error_message = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # When the job ended, completed or failed for good: the day its DailyTally counted it.
    finished_at = models.DateTimeField(null=True, blank=True)
    # While a retry waits: when the next attempt is due (shown to clients as nextAttemptAt).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # When a scheduled send (``sendAt``) goes out; null for a job sent at once. Shown as ``scheduledFor``.
    scheduled_for = models.DateTimeField(null=True, blank=True)
    # No worker may claim the job before this: the delivering worker's lease, a retry's due time, or a scheduled
    # send's time.
    locked_until = models.DateTimeField(null=True, blank=True)
    # When the dispatcher sends the job's task if it is still unfinished: a scheduled send's time, or a moment after
    # the task went out, in case the broker lost it (docs/delivery-engine.md, "The dispatcher").
    requeue_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # The database, not a read-then-write, decides which of two concurrent sends wins.
            # A key is the caller's within its mode: a test key's jobs hold none of a live key's (docs/rules.md).
            models.UniqueConstraint(
                fields=["account", "test", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="unique_idempotency_key_per_mode",
            )
        ]
        indexes = [
            models.Index(fields=["account", "-created_at"], name="job_account_recent"),
            models.Index(fields=["account", "status", "-created_at"], name="job_account_status_recent"),
            models.Index(fields=["account", "type", "-created_at"], name="job_account_type_recent"),
            models.Index(fields=["account", "destination", "-created_at"], name="job_account_destination_recent"),
            models.Index(fields=["requeue_at"], condition=Q(requeue_at__isnull=False), name="job_requeue_due"),
            # A test key's lists: test jobs are few, and the indexes above would walk every live job to find them.
            # Live lists read the indexes above and pass over the test jobs among them.
            models.Index(fields=["account", "-created_at"], condition=Q(test=True), name="job_account_test_recent"),
            # A message's deliveries, and an endpoint's newest first: indexed only where set, as few jobs are.
            models.Index(fields=["message"], condition=Q(message__isnull=False), name="job_message"),
            models.Index(
                fields=["endpoint", "-created_at"], condition=Q(endpoint__isnull=False), name="job_endpoint_recent"
            ),
        ]

    # A new email job's files (notifications/attachments.py), not a column: the store writes them in the job's
    # transaction (notifications/engine/store.py). A job read back never has them here.
    new_attachments: tuple[Attachment, ...] = ()

    def __str__(self) -> str:
        return f"{self.type} job {self.id} ({self.status})"


class JobTag(models.Model):
    """One of an email job's tags (its payload's ``tags``), in a table of its own so the jobs list filters by tag
    through an index, as fast as by recipient (docs/rules.md, "Listing jobs"): the payload is JSON text.

    Written with its job, in the same transaction; a job without tags has none and costs no statement more.
    Deleted with its job.
    """

    # The unique (job, tag) index serves the job's lookups and the cascade's deletes: no index of its own.
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="job_tags", db_index=False)
    # The list's index leads with the account: no index of its own either.
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+", db_index=False)
    tag = models.CharField(max_length=64)
    # The job's mode and created_at (neither ever changes): a tag's list reads its jobs of one mode in the list's
    # order, newest first, from the index, and counts them there without reading the jobs.
    test = models.BooleanField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "tag"], name="one_row_per_job_tag")]
        indexes = [models.Index(fields=["account", "test", "tag", "-created_at"], name="job_tag_account_recent")]

    def __str__(self) -> str:
        return f"{self.tag} on {self.job_id}"


class Attachment(models.Model):
    """A file an email job carries, in its own table so that no read of jobs (a claim, a list, a status) loads its
    bytes: only the delivery and the holder's download read ``content`` (docs/architecture.md, "Attachments").
    The job's payload keeps its metadata. Deleted with its job."""

    # The (job, position) constraint's index serves the job's lookups and its cascade.
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attachments", db_index=False)
    # Its place in the request's list, from 0: the payload's order, and the download's address.
    position = models.PositiveSmallIntegerField()
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=255)
    # Set for an inline attachment, which the body shows as cid:<content_id>.
    content_id = models.CharField(max_length=255, null=True, blank=True)
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    content = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "position"], name="attachment_job_position")]

    def __str__(self) -> str:
        return f"{self.filename} of {self.job_id}"


class DailyTally(models.Model):
    """An account's jobs that finished on one day (UTC): the dashboard's daily figures.

    Recorded with the attempt that finishes a job (and taken back when a failed job is retried), so
    the figures for any period are a few rows, however many jobs the account has.
    """

    # The unique (account, day) index serves the account's lookups: no index of its own.
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="daily_tallies", db_index=False)
    day = models.DateField()
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "day"], name="unique_daily_tally")]

    def __str__(self) -> str:
        return f"{self.day}: {self.completed} completed, {self.failed} failed"


class DeliveryStatus(models.TextChoices):
    SUCCESS = "success"
    FAILED = "failed"


class DeliveryLog(models.Model):
    """One delivery attempt of a job."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="delivery_logs")
    attempt = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=8, choices=DeliveryStatus.choices)
    used_provider = models.CharField(max_length=16, choices=ProviderName.choices, null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    response_excerpt = models.TextField(blank=True, default="")
    # The provider's id for the message, to match its delivery events to this job.
    provider_message_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"attempt {self.attempt} of {self.job_id}: {self.status}"


class JobAnnouncement(models.Model):
    """A job of an account with event endpoints that finished, waiting to be announced (notifications/outcomes.py).

    Written with the job's finishing state, by the same statement or transaction: a crash loses no announcement, and
    the job pays one row, not the events' own. Deleted in the transaction that announces it, so a job is announced
    once. It keeps the state the job finished in, as its event tells it: the job may be retried before the event is
    written.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=12, choices=JobStatus.choices)
    attempts = models.PositiveSmallIntegerField()
    error_message = models.TextField(null=True, blank=True)
    finished_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.status} {self.job_id}"


class DestinationHealth(models.Model):
    """How the account's webhooks to one destination host are faring: the failed attempts in a row, and what was
    said of the streak (docs/event-endpoints.md, "Endpoint health"). A row exists once an attempt there failed."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="destination_health", db_index=False)
    # The job's ``destination``: the webhook URL's host, in lower case.
    destination = models.CharField(max_length=254)
    # ``scheme://host[:port]`` of the latest failed attempt, as the event and the email name it.
    origin = models.CharField(max_length=300, blank=True, default="")
    consecutive_failures = models.PositiveIntegerField(default=0)
    # When the current streak began; None while there is none.
    failing_since = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    # Whether the current streak has been announced as ``endpoint.failing``: once per streak.
    announced = models.BooleanField(default=False)
    # When the holder was last emailed about this destination: at most once a day.
    alerted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Also the claim's lookup, by account and destination.
        constraints = [models.UniqueConstraint(fields=["account", "destination"], name="one_health_per_destination")]
        verbose_name_plural = "destination health"

    def __str__(self) -> str:
        return f"{self.destination}: {self.consecutive_failures} failed in a row"
