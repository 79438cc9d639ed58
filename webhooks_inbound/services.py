"""Setting the providers' event credentials of an account, and storing the events they send."""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from django.db import transaction
from django.utils.crypto import salted_hmac

from accounts.models import Account
from core.crypto import encrypt
from core.errors import InvalidRequest
from notifications.models import DeliveryLog, Job
from webhooks_inbound.events import ReportedEvent
from webhooks_inbound.models import EmailEvent, TrackingCredentials
from webhooks_inbound.verification import resend_verifier, sendgrid_public_key

logger = logging.getLogger(__name__)

POSTMARK_PASSWORD_SALT = "notifyhub.webhooks_inbound.postmark_password"


def postmark_password_digest(password: str) -> str:
    """Keyed with SECRET_KEY: a leaked table alone does not let anyone test guesses."""
    return salted_hmac(POSTMARK_PASSWORD_SALT, password, algorithm="sha256").hexdigest()


def _credentials(account: Account) -> TrackingCredentials:
    credentials, _ = TrackingCredentials.objects.get_or_create(account=account)
    return credentials


def postmark_password_generate(*, account: Account) -> str:
    """A new Basic Auth password for the account's Postmark webhook, replacing any other; shown once."""
    password = secrets.token_urlsafe(32)
    credentials = _credentials(account)
    credentials.postmark_password_digest = postmark_password_digest(password)
    credentials.save(update_fields=["postmark_password_digest", "updated_at"])
    return password


def sendgrid_key_set(*, account: Account, verification_key: str) -> None:
    """Stores the verification key SendGrid shows for its signed event webhook."""
    key = verification_key.strip()
    if sendgrid_public_key(key) is None:
        raise InvalidRequest("The SendGrid verification key must be the base64 public key SendGrid shows")
    credentials = _credentials(account)
    credentials.sendgrid_verification_key = key
    credentials.save(update_fields=["sendgrid_verification_key", "updated_at"])


def resend_secret_set(*, account: Account, signing_secret: str) -> None:
    """Stores the signing secret (``whsec_...``) Resend shows for the account's webhook."""
    secret = signing_secret.strip()
    if resend_verifier(secret) is None:
        raise InvalidRequest("The Resend signing secret must be the whsec_... secret Resend shows")
    credentials = _credentials(account)
    credentials.encrypted_resend_secret = encrypt(secret)
    credentials.save(update_fields=["encrypted_resend_secret", "updated_at"])


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


def events_record(*, account: Account, provider: str, events: Sequence[ReportedEvent], ignored: int) -> Recorded:
    """Stores each event under the account's job it names, once; the whole batch in one transaction."""
    job_ids = _job_ids(account, events)
    rows: dict[str, EmailEvent] = {}  # by provider event id: a batch naming one event twice stores it once
    for event, job_id in zip(events, job_ids, strict=True):
        if job_id is not None:
            rows.setdefault(event.provider_event_id, _row(account, provider, job_id, event))
    with transaction.atomic():
        known = set(
            EmailEvent.objects.filter(account=account, provider=provider, provider_event_id__in=list(rows)).values_list(
                "provider_event_id", flat=True
            )
        )
        new = [row for event_id, row in rows.items() if event_id not in known]
        # A concurrent delivery of the same event may insert between the read and here: the
        # unique constraint keeps it to one row either way.
        EmailEvent.objects.bulk_create(new, ignore_conflicts=True)
    unmatched = job_ids.count(None)
    if unmatched:
        logger.info("Dropped %d %s event(s) naming no message of account %s", unmatched, provider, account.public_id)
    return Recorded(
        received=len(events) + ignored,
        stored=len(new),
        duplicates=len(events) - unmatched - len(new),
        unmatched=unmatched,
        ignored=ignored,
    )


def _job_ids(account: Account, events: Sequence[ReportedEvent]) -> list[uuid.UUID | None]:
    """Each event's job among the account's own: the job id in its metadata, else its message id.

    Two queries for the whole batch; neither can reach another account's jobs.
    """
    claimed = {event.job_id for event in events if event.job_id}
    own_jobs = (
        set(Job.objects.filter(account=account, id__in=claimed).values_list("id", flat=True)) if claimed else set()
    )
    message_ids = {message_id for event in events if event.job_id not in own_jobs for message_id in event.message_ids}
    by_message: dict[str | None, uuid.UUID] = (
        dict(
            DeliveryLog.objects.filter(job__account=account, provider_message_id__in=message_ids).values_list(
                "provider_message_id", "job_id"
            )
        )
        if message_ids
        else {}
    )
    return [event.job_id if event.job_id in own_jobs else _job_by_message(event, by_message) for event in events]


def _job_by_message(event: ReportedEvent, by_message: dict[str | None, uuid.UUID]) -> uuid.UUID | None:
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
