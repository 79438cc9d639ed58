"""The providers' event webhooks, as each provider sends them: payload shapes, credentials, signatures.

A sender builds what its provider would POST (body bytes and headers) for a message; tests hand
it to Django's test client, the end-to-end test and the benchmark send it over HTTP.

    sendgrid = SendGridEvents()                      # a fresh ECDSA P-256 key pair
    sendgrid_key_set(account=..., verification_key=sendgrid.verification_key)
    delivery = sendgrid.batch([sendgrid.event("delivered", anymail_id=message_id)])
    client.post(url, delivery.body, content_type="application/json", headers=delivery.headers)

Shapes follow the providers' references: Postmark https://postmarkapp.com/developer/webhooks/webhooks-overview,
SendGrid https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event (and its
"Getting started with the Event Webhook Security Features"), Resend https://resend.com/docs/dashboard/webhooks/event-types
and Svix https://docs.svix.com/receiving/verifying-payloads/how-manual.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

_ids = itertools.count(1)


@dataclass(frozen=True)
class Delivery:
    """One POST a provider makes to a receiver."""

    body: bytes
    headers: dict[str, str]

    def post(self, url: str, *, timeout: float = 10.0) -> requests.Response:
        return requests.post(
            url, data=self.body, headers={"Content-Type": "application/json", **self.headers}, timeout=timeout
        )


def _iso(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class PostmarkEvents:
    """Postmark signs nothing: the customer puts Basic Auth credentials into the webhook URL."""

    RECORD_TIME_FIELD = {
        "Delivery": "DeliveredAt",
        "Bounce": "BouncedAt",
        "SpamComplaint": "BouncedAt",
        "Open": "ReceivedAt",
        "Click": "ReceivedAt",
        "SubscriptionChange": "ChangedAt",
    }
    RECIPIENT_FIELD = {"Bounce": "Email", "SpamComplaint": "Email"}

    def __init__(self, password: str, *, user: str = "postmark") -> None:
        self.password = password
        self.user = user

    def event(
        self,
        record_type: str,
        *,
        message_id: str,
        recipient: str = "user@example.com",
        metadata: dict[str, str] | None = None,
        at: datetime | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "RecordType": record_type,
            "ServerID": 23,
            "MessageStream": "outbound",
            "MessageID": message_id,
            self.RECIPIENT_FIELD.get(record_type, "Recipient"): recipient,
            self.RECORD_TIME_FIELD[record_type]: _iso(at),
            "Tag": "",
            "Metadata": metadata or {},
        }
        if record_type in ("Bounce", "SpamComplaint"):
            # Bounces and spam complaints carry Postmark's own id; the other records do not.
            event.update({"ID": next(_ids), "Type": record_type if record_type == "SpamComplaint" else "HardBounce"})
        if record_type == "SubscriptionChange":
            event.update({"Origin": "Recipient", "SuppressSending": True, "SuppressionReason": "ManualSuppression"})
        return {**event, **fields}

    def deliver(self, event: dict[str, Any], *, password: str | None = None) -> Delivery:
        credentials = f"{self.user}:{self.password if password is None else password}".encode()
        return Delivery(_json(event), {"Authorization": "Basic " + base64.b64encode(credentials).decode()})


class SendGridEvents:
    """SendGrid signs ``timestamp + body`` with its ECDSA P-256 key; the customer gives us the public half."""

    def __init__(self) -> None:
        self.private_key = ec.generate_private_key(ec.SECP256R1())

    @property
    def verification_key(self) -> str:
        """The public key as SendGrid's settings page shows it: base64 DER, no PEM armour."""
        der = self.private_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(der).decode()

    def event(
        self,
        kind: str,
        *,
        anymail_id: str | None = None,
        job_id: str | None = None,
        email: str = "user@example.com",
        timestamp: int | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "email": email,
            "timestamp": int(time.time()) if timestamp is None else timestamp,
            "smtp-id": f"<{uuid.uuid4().hex[:14]}@ismtpd-555>",
            "event": kind,
            "sg_event_id": base64.b64encode(secrets.token_bytes(16)).decode(),
            "sg_message_id": f"{uuid.uuid4().hex[:22]}.filter0001.16648.5515E0B88.0",
        }
        # The message's custom_args come back on each event: anymail's message id and our job id.
        if anymail_id:
            event["anymail_id"] = anymail_id
        if job_id:
            event["job_id"] = job_id
        return {**event, **fields}

    def batch(self, events: list[dict[str, Any]], *, signed_at: int | None = None) -> Delivery:
        body = _json(events)
        timestamp = str(int(time.time()) if signed_at is None else signed_at)
        signature = self.private_key.sign(timestamp.encode() + body, ec.ECDSA(hashes.SHA256()))
        return Delivery(
            body,
            {
                "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(signature).decode(),
                "X-Twilio-Email-Event-Webhook-Timestamp": timestamp,
            },
        )


class ResendEvents:
    """Resend delivers through Svix: an HMAC-SHA256 over ``id.timestamp.body`` keyed with the ``whsec_`` secret."""

    def __init__(self) -> None:
        self.secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()

    def event(
        self, kind: str, *, email_id: str, to: str = "user@example.com", at: datetime | None = None, **data: Any
    ) -> dict[str, Any]:
        return {
            "type": kind,
            "created_at": _iso(at),
            "data": {
                "created_at": _iso(at),
                "email_id": email_id,
                "from": "Acme <billing@em.example.com>",
                "to": [to],
                "subject": "Welcome",
                **data,
            },
        }

    def deliver(
        self, event: dict[str, Any], *, message_id: str | None = None, signed_at: int | None = None
    ) -> Delivery:
        body = _json(event)
        svix_id = message_id or f"msg_{secrets.token_hex(12)}"
        timestamp = str(int(time.time()) if signed_at is None else signed_at)
        key = base64.b64decode(self.secret.removeprefix("whsec_"))
        digest = hmac.new(key, f"{svix_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
        return Delivery(
            body,
            {
                "svix-id": svix_id,
                "svix-timestamp": timestamp,
                "svix-signature": "v1," + base64.b64encode(digest).decode(),
            },
        )
