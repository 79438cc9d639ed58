"""Provider events in one shape: what happened, to which message, when (docs/inbound-events.md).

django-anymail parses each provider's payload into an ``AnymailTrackingEvent``; the type is
read from the provider's own event name instead of anymail's normalised one, because the
mapping is ours: every provider name below maps to exactly one of the seven types, and a
provider's temporary failure is DEFERRED rather than a bounce.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from anymail.signals import AnymailTrackingEvent

from providers.base import JOB_ID_METADATA_KEY
from providers.names import EmailEventType, ProviderName
from suppressions.models import SuppressionReason

RECIPIENT_MAX_LENGTH = 320
EVENT_ID_MAX_LENGTH = 255
# An X-Message-Id of SendGrid's has had two dots at most (14c5d75ce93.dfd.64b469), and newer ones have none; one
# more dot is allowed for a format not seen yet. Each candidate is one more value to look up, so an id made of dots
# gives no more than these.
SENDGRID_SEND_ID_CANDIDATES = 4

POSTMARK_RECORD_TYPES = {
    "Delivery": EmailEventType.DELIVERED,
    "Open": EmailEventType.OPENED,
    "Click": EmailEventType.CLICKED,
    "Bounce": EmailEventType.BOUNCED,
    "SpamComplaint": EmailEventType.SPAM_REPORT,
    "SubscriptionChange": EmailEventType.UNSUBSCRIBED,
}
# Bounce types Postmark documents as temporary (https://postmarkapp.com/developer/api/bounce-api#bounce-types).
POSTMARK_TEMPORARY_BOUNCES = {"Transient", "SoftBounce", "DnsError"}
# And those that say the address itself is gone or refused for good: the ones that suppress it. Its other types
# (an auto-responder, a challenge, a virus notice, ...) are bounces that say nothing of the address.
POSTMARK_PERMANENT_BOUNCES = {"HardBounce", "BadEmailAddress", "ManuallyDeactivated"}

SENDGRID_EVENTS = {
    "delivered": EmailEventType.DELIVERED,
    "open": EmailEventType.OPENED,
    "click": EmailEventType.CLICKED,
    "bounce": EmailEventType.BOUNCED,
    "dropped": EmailEventType.BOUNCED,
    "spamreport": EmailEventType.SPAM_REPORT,
    "unsubscribe": EmailEventType.UNSUBSCRIBED,
    "group_unsubscribe": EmailEventType.UNSUBSCRIBED,
    "deferred": EmailEventType.DEFERRED,
}

RESEND_EVENTS = {
    "email.delivered": EmailEventType.DELIVERED,
    "email.opened": EmailEventType.OPENED,
    "email.clicked": EmailEventType.CLICKED,
    "email.bounced": EmailEventType.BOUNCED,
    "email.complained": EmailEventType.SPAM_REPORT,
    "email.delivery_delayed": EmailEventType.DEFERRED,
}


def postmark_event_type(event: Mapping[str, Any]) -> EmailEventType | None:
    record_type = event.get("RecordType")
    if record_type == "Bounce" and event.get("Type") in POSTMARK_TEMPORARY_BOUNCES:
        return EmailEventType.DEFERRED
    if record_type == "SubscriptionChange" and event.get("SuppressSending") is False:
        return None  # a reactivated recipient: no longer unsubscribed
    return POSTMARK_RECORD_TYPES.get(record_type)  # type: ignore[arg-type]


def sendgrid_event_type(event: Mapping[str, Any]) -> EmailEventType | None:
    # SendGrid reports a receiving server's temporary refusal as a bounce of type "blocked"
    # (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event#delivery-events).
    if event.get("event") == "bounce" and event.get("type") == "blocked":
        return EmailEventType.DEFERRED
    return SENDGRID_EVENTS.get(event.get("event"))  # type: ignore[arg-type]


def _resend_bounce_type(event: Mapping[str, Any]) -> Any:
    """Resend's `Permanent`, `Transient` or `Undetermined` (https://resend.com/docs/dashboard/webhooks/event-types)."""
    data = event.get("data")
    bounce = data.get("bounce") if isinstance(data, dict) else None
    return bounce.get("type") if isinstance(bounce, dict) else None


def resend_event_type(event: Mapping[str, Any]) -> EmailEventType | None:
    if event.get("type") == "email.bounced" and _resend_bounce_type(event) == "Transient":
        return EmailEventType.DEFERRED
    return RESEND_EVENTS.get(event.get("type"))  # type: ignore[arg-type]


EVENT_TYPE_OF: dict[str, Callable[[Mapping[str, Any]], EmailEventType | None]] = {
    ProviderName.POSTMARK: postmark_event_type,
    ProviderName.SENDGRID: sendgrid_event_type,
    ProviderName.RESEND: resend_event_type,
}

# Whether a BOUNCED event is one the provider calls permanent (its temporary ones are DEFERRED already). SendGrid's
# "dropped" is a message it would not send, for reasons that are not all the address's: it suppresses nothing.
IS_PERMANENT_BOUNCE: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    ProviderName.POSTMARK: lambda event: event.get("Type") in POSTMARK_PERMANENT_BOUNCES,
    ProviderName.SENDGRID: lambda event: event.get("event") == "bounce",
    ProviderName.RESEND: lambda event: _resend_bounce_type(event) == "Permanent",
}
# The other events that mean "never again"; a deferral never does (docs/suppressions.md).
SUPPRESSING_EVENTS = {
    EmailEventType.SPAM_REPORT: SuppressionReason.SPAM_REPORT,
    EmailEventType.UNSUBSCRIBED: SuppressionReason.UNSUBSCRIBED,
}


def event_suppression_reason(
    provider: str, event_type: EmailEventType, event: Mapping[str, Any]
) -> SuppressionReason | None:
    """Why the event puts its recipient on the suppression list, or None when it does not."""
    if event_type == EmailEventType.BOUNCED:
        return SuppressionReason.HARD_BOUNCE if IS_PERMANENT_BOUNCE[provider](event) else None
    return SUPPRESSING_EVENTS.get(event_type)


@dataclass(frozen=True)
class ReportedEvent:
    type: EmailEventType
    # The provider's id for the event; the same event sent again carries the same one.
    provider_event_id: str
    occurred_at: datetime
    recipient: str
    # How the event names its message: the ids the provider may have given it at send time, the
    # one anymail reads first, and the job id NotifyHub sent along as metadata.
    message_ids: tuple[str, ...]
    job_id: uuid.UUID | None
    payload: str
    # Why the recipient goes on the account's suppression list once the event is stored; None: it does not.
    suppresses: SuppressionReason | None = None


def reported_event(provider: str, parsed: AnymailTrackingEvent, *, received_at: datetime) -> ReportedEvent | None:
    """The event in our shape, or None for an event type NotifyHub does not track."""
    raw: Mapping[str, Any] = parsed.esp_event
    event_type = EVENT_TYPE_OF[provider](raw)
    if event_type is None:
        return None
    payload = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return ReportedEvent(
        type=event_type,
        provider_event_id=_text(parsed.event_id, EVENT_ID_MAX_LENGTH) or _digest(payload),
        occurred_at=_aware(parsed.timestamp) or received_at,
        recipient=_text(parsed.recipient, RECIPIENT_MAX_LENGTH),
        message_ids=_message_ids(provider, parsed),
        job_id=_job_id(parsed.metadata),
        payload=payload,
        suppresses=event_suppression_reason(provider, event_type, raw),
    )


def _message_ids(provider: str, parsed: AnymailTrackingEvent) -> tuple[str, ...]:
    ids = [_text(parsed.message_id, EVENT_ID_MAX_LENGTH)]
    sg_message_id = parsed.esp_event.get("sg_message_id") if provider == ProviderName.SENDGRID else None
    if isinstance(sg_message_id, str):
        ids.extend(sendgrid_send_ids(sg_message_id))
    return tuple(message_id for message_id in ids if message_id)


def sendgrid_send_ids(sg_message_id: str) -> list[str]:
    """The X-Message-Id the send may have had: sg_message_id begins with it, up to one of its dots.

    ``14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0`` was sent as ``14c5d75ce93.dfd.64b469``;
    newer ids have no dot of their own. Each prefix ending before one of the first
    SENDGRID_SEND_ID_CANDIDATES dots is a candidate.
    """
    parts = sg_message_id[:EVENT_ID_MAX_LENGTH].split(".", SENDGRID_SEND_ID_CANDIDATES)
    return [".".join(parts[:count]) for count in range(1, len(parts))]


def _digest(payload: str) -> str:
    """An id for an event the provider gives none (Postmark's deliveries, opens, clicks).

    The same event sent again hashes the same.
    """
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def _text(value: Any, max_length: int) -> str:
    return str(value)[:max_length] if value not in (None, "") else ""


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _job_id(metadata: Any) -> uuid.UUID | None:
    """The job id NotifyHub put in the message's metadata at send time, when the event carries it back."""
    value = metadata.get(JOB_ID_METADATA_KEY) if isinstance(metadata, dict) else None
    try:
        return uuid.UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None
