"""Setting the providers' event credentials of an account, and storing the events they send."""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils.crypto import salted_hmac

from accounts.models import Account, AuditAction
from accounts.services import audit_record, confirmed_account_required
from core import sql
from core.api.envelope import iso_utc
from core.crypto import encrypt
from core.errors import ResendSecretInvalid, SendGridKeyInvalid, TrackingCredentialNotSettable
from core.signals import AccountEvent, announce
from notifications.models import DeliveryLog, Job
from providers.names import ProviderName
from suppressions.models import SuppressionReason
from suppressions.services import Reported, suppressions_record
from webhooks_inbound.events import ReportedEvent
from webhooks_inbound.models import EmailEvent, TrackingCredentials
from webhooks_inbound.verification import resend_verifier, sendgrid_public_key

logger = logging.getLogger(__name__)

POSTMARK_PASSWORD_SALT = "notifyhub.webhooks_inbound.postmark_password"


def postmark_password_digest(password: str) -> str:
    """Keyed with SECRET_KEY: a leaked table alone does not let anyone test guesses."""
    return salted_hmac(POSTMARK_PASSWORD_SALT, password, algorithm="sha256").hexdigest()


def _credentials(account: Account) -> TrackingCredentials:
    """The account's credentials row, to change: only a confirmed account keeps one."""
    confirmed_account_required(account)
    credentials, _ = TrackingCredentials.objects.get_or_create(account=account)
    return credentials


def _credential_save(account: Account, credentials: TrackingCredentials, field: str, *, provider: str) -> None:
    """Saves one provider's credential, recording which provider's it is: the credential itself never."""
    with transaction.atomic():
        credentials.save(update_fields=[field, "updated_at"])
        audit_record(account=account, action=AuditAction.TRACKING_CREDENTIAL_SET, target=provider)


def postmark_password_generate(*, account: Account) -> str:
    """A new Basic Auth password for the account's Postmark webhook, replacing any other; shown once."""
    password = secrets.token_urlsafe(32)
    credentials = _credentials(account)
    credentials.postmark_password_digest = postmark_password_digest(password)
    _credential_save(account, credentials, "postmark_password_digest", provider=ProviderName.POSTMARK)
    return password


def sendgrid_key_set(*, account: Account, verification_key: str) -> None:
    """Stores the verification key SendGrid shows for its signed event webhook."""
    key = verification_key.strip()
    if sendgrid_public_key(key) is None:
        raise SendGridKeyInvalid()
    credentials = _credentials(account)
    credentials.sendgrid_verification_key = key
    _credential_save(account, credentials, "sendgrid_verification_key", provider=ProviderName.SENDGRID)


def resend_secret_set(*, account: Account, signing_secret: str) -> None:
    """Stores the signing secret (``whsec_...``) Resend shows for the account's webhook."""
    secret = signing_secret.strip()
    if resend_verifier(secret) is None:
        raise ResendSecretInvalid()
    credentials = _credentials(account)
    credentials.encrypted_resend_secret = encrypt(secret)
    _credential_save(account, credentials, "encrypted_resend_secret", provider=ProviderName.RESEND)


# The providers whose credential the holder copies from the provider (Postmark's is generated).
SETTABLE_PROVIDERS = ("resend", "sendgrid")


def tracking_credential_set(*, account: Account, provider: str, value: str) -> None:
    """Stores what ``provider`` (one of SETTABLE_PROVIDERS) shows for its signed events."""
    if provider == "sendgrid":
        sendgrid_key_set(account=account, verification_key=value)
    elif provider == "resend":
        resend_secret_set(account=account, signing_secret=value)
    else:
        raise TrackingCredentialNotSettable(provider=provider)


@dataclass(frozen=True)
class Recorded:
    received: int
    stored: int
    duplicates: int
    # Events naming no message of this account: acknowledged and dropped.
    unmatched: int
    # Event types NotifyHub does not track (a provider's "processed", "sent", ...).
    ignored: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


# Providers post events one at a time as fast as they happen (Postmark) or a thousand at once
# (SendGrid): the lookups and the insert are written out, as the ORM spent longer compiling these
# statements than the database spent running them (docs/departures.md).
# Off the framework's road: docs/departures.md, "raw-sql-receivers".
# ``{job}``: the job's id, and its payload where the account hears of its events (their data carries the email's
# tags and metadata), read by the query that finds the job; ``{values}``: the IN list.
JOBS_BY_ID_SQL = f"""
    SELECT {{job}} FROM {sql.table(Job)} j
    WHERE j.{sql.column(Job, "account")} = %s AND j.{sql.column(Job, "id")} IN ({{values}})
"""
JOBS_BY_MESSAGE_SQL = f"""
    SELECT l.{sql.column(DeliveryLog, "provider_message_id")}, {{job}}
    FROM {sql.table(DeliveryLog)} l
    JOIN {sql.table(Job)} j ON j.{sql.column(Job, "id")} = l.{sql.column(DeliveryLog, "job")}
    WHERE j.{sql.column(Job, "account")} = %s AND l.{sql.column(DeliveryLog, "provider_message_id")} IN ({{values}})
"""
JOB_ID = f"j.{sql.column(Job, 'id')}"
JOB_ID_AND_LABELS = f"{JOB_ID}, j.{sql.column(Job, 'labels')}"
LABELS_FIELD = Job._meta.get_field("labels")
EVENT_FIELDS = tuple(field.name for field in EmailEvent._meta.concrete_fields if not field.primary_key)
# The unique constraint decides what is new, in the statement itself: a concurrent delivery of
# the same event cannot slip between a read and the write, and what comes back was stored now.
INSERT_EVENTS_SQL = f"""
    INSERT INTO {sql.table(EmailEvent)} ({sql.columns(EmailEvent, fields=EVENT_FIELDS)})
    VALUES {{}}
    ON CONFLICT ({sql.columns(EmailEvent, fields=("account", "provider", "provider_event_id"))}) DO NOTHING
    RETURNING {sql.column(EmailEvent, "provider_event_id")}
"""


def events_record(*, account: Account, provider: str, events: Sequence[ReportedEvent], ignored: int) -> Recorded:
    """Stores each event under the account's job it names, once, and puts the recipient of each newly stored event
    that means "never again" on the account's suppression list; an account with event endpoints hears of each newly
    stored event and suppression. The whole batch in one transaction."""
    emits_events = account.has_event_endpoints
    lookup = JobLookup(account, with_labels=emits_events)
    job_ids = _job_ids(lookup, events)
    # By provider event id: a batch naming one event twice stores it once.
    placed: dict[str, tuple[ReportedEvent, uuid.UUID]] = {}
    for event, job_id in zip(events, job_ids, strict=True):
        if job_id is not None:
            placed.setdefault(event.provider_event_id, (event, job_id))
    with transaction.atomic():
        stored = _insert_new([_row(account, provider, job_id, event) for event, job_id in placed.values()])
        newly = [placed[key] for key in stored]
        reported = _suppressing(account, provider, newly)
        suppressions_record(account=account, reported=reported, emits_events=emits_events)
        if emits_events:
            announced = [_announced(provider, event, job_id, lookup.labels.get(job_id, {})) for event, job_id in newly]
            announce(account_id=account.pk, events=announced)
    unmatched = job_ids.count(None)
    if unmatched:
        logger.info("Dropped %d %s event(s) naming no message of account %s", unmatched, provider, account.public_id)
    return Recorded(
        received=len(events) + ignored,
        stored=len(stored),
        duplicates=len(events) - unmatched - len(stored),
        unmatched=unmatched,
        ignored=ignored,
    )


def _announced(provider: str, event: ReportedEvent, job_id: uuid.UUID, labels: dict[str, Any]) -> AccountEvent:
    """``email.<type>`` (docs/event-endpoints.md): which job's email, to whom, through whom, and when, with the
    email's ``labels`` (Job.labels)."""
    data = {
        "jobId": str(job_id),
        "recipient": event.recipient,
        "provider": provider,
        "occurredAt": iso_utc(event.occurred_at),
    }
    return AccountEvent(f"email.{event.type.lower()}", data | labels)


def _suppressing(account: Account, provider: str, stored: list[tuple[ReportedEvent, uuid.UUID]]) -> list[Reported]:
    """The addresses the newly stored events take off the list of those the account may email: an unsubscribe from
    the topic of its job's email, when it has one; a bounce or a complaint from every email (docs/suppressions.md,
    "Topics")."""
    unsubscribing = {job_id for event, job_id in stored if event.suppresses == SuppressionReason.UNSUBSCRIBED}
    topics = _topics_of(account, unsubscribing)
    return [
        Reported(
            email=event.recipient,
            reason=reason,
            provider=provider,
            job_id=job_id,
            topic=topics.get(job_id) if reason == SuppressionReason.UNSUBSCRIBED else None,
        )
        for event, job_id in stored
        if (reason := event.suppresses) is not None
    ]


def _topics_of(account: Account, job_ids: set[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The topics of those of ``job_ids`` (the account's) sent with one: a query only when an event unsubscribes."""
    if not job_ids:
        return {}
    with_topic = Job.objects.filter(account=account, id__in=job_ids, topic__isnull=False)
    return {job_id: str(topic) for job_id, topic in with_topic.values_list("id", "topic")}


def _insert_new(rows: list[EmailEvent]) -> list[str]:
    """Inserts the rows not stored before; the provider event ids of those that were new."""
    stored: list[str] = []
    with sql.default_connection().cursor() as cursor:
        for batch in sql.in_batches(rows, width=len(EVENT_FIELDS)):
            params = sql.insert_values(*batch, fields=EVENT_FIELDS)
            cursor.execute(INSERT_EVENTS_SQL.format(sql.values_rows(len(batch), width=len(EVENT_FIELDS))), params)
            stored.extend(event_id for (event_id,) in cursor.fetchall())
    return stored


@dataclass
class JobLookup:
    """Finds the account's jobs that events name; ``with_labels``, it reads their labels (Job.labels) in the same
    queries and keeps those of the jobs that have any."""

    account: Account
    with_labels: bool
    labels: dict[uuid.UUID, dict[str, Any]] = field(default_factory=dict)

    def by_id(self, job_ids: list[Any]) -> set[uuid.UUID]:
        return {self._read(row) for row in self._select_in(JOBS_BY_ID_SQL, job_ids)}

    def by_message(self, message_ids: set[str]) -> dict[str, uuid.UUID]:
        rows = self._select_in(JOBS_BY_MESSAGE_SQL, list(message_ids))
        return {message_id: self._read(job_row) for message_id, *job_row in rows}

    def _read(self, row: Sequence[Any]) -> uuid.UUID:
        job_id = _as_uuid(row[0])
        if self.with_labels and (labels := LABELS_FIELD.to_python(row[1])):
            self.labels[job_id] = labels
        return job_id

    def _select_in(self, statement: str, values: list[Any]) -> list[tuple[Any, ...]]:
        """The rows of ``statement`` for the account with its ``IN`` list filled with ``values``."""
        rows: list[tuple[Any, ...]] = []
        if not values:
            return rows
        job = JOB_ID_AND_LABELS if self.with_labels else JOB_ID
        with connection.cursor() as cursor:
            for batch in sql.in_batches(values, other_params=1):
                cursor.execute(statement.format(job=job, values=sql.in_list(len(batch))), [self.account.pk, *batch])
                rows.extend(cursor.fetchall())
        return rows


def _job_ids(lookup: JobLookup, events: Sequence[ReportedEvent]) -> list[uuid.UUID | None]:
    """Each event's job among the account's own: the job id in its metadata, else its message id.

    A query or two for the whole batch (more on SQLite, whose statements take fewer values);
    none can reach another account's jobs.
    """
    claimed = [sql.db_value(Job, "id", job_id) for job_id in {event.job_id for event in events if event.job_id}]
    own_jobs = lookup.by_id(claimed)
    unplaced = [event for event in events if event.job_id not in own_jobs]
    by_message = lookup.by_message({event.message_ids[0] for event in unplaced if event.message_ids})
    # The further candidates (SendGrid's sg_message_id prefixes) only for events the first id did not place.
    still_unplaced = [event for event in unplaced if _job_by_message(event, by_message) is None]
    by_message |= lookup.by_message({other for event in still_unplaced for other in event.message_ids[1:]})
    return [event.job_id if event.job_id in own_jobs else _job_by_message(event, by_message) for event in events]


def _as_uuid(value: Any) -> uuid.UUID:
    """A job id as read back: PostgreSQL gives a UUID, SQLite its 32 hex digits."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)


def _job_by_message(event: ReportedEvent, by_message: dict[str, uuid.UUID]) -> uuid.UUID | None:
    return next((by_message[message_id] for message_id in event.message_ids if message_id in by_message), None)


def _row(account: Account, provider: str, job_id: uuid.UUID, event: ReportedEvent) -> EmailEvent:
    return EmailEvent(
        account=account,
        job_id=job_id,
        provider=provider,
        type=event.type,
        recipient=event.recipient,
        occurred_at=event.occurred_at,
        provider_event_id=event.provider_event_id,
        payload=event.payload,
    )
