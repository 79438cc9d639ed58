"""Resend: emails through anymail; domains under ``/domains``. https://resend.com/docs/api-reference/domains"""

from __future__ import annotations

import mimetypes
from dataclasses import replace
from typing import Any

from providers.base import (
    Credentials,
    DnsRecord,
    DomainState,
    EmailAttachment,
    EmailProvider,
    OutgoingEmail,
    Verification,
    top_level_message,
)

# Resend lists inbound-mail records too; NotifyHub only sends.
SENDING_RECORDS = {"SPF", "DKIM", "DMARC"}
# anymail sends tags and metadata to Resend as these headers (backends/resend.py), lower-cased here.
TRACKING_HEADERS = {"x-tags", "x-metadata"}


class Resend(EmailProvider):
    name = "RESEND"
    anymail_backend = "providers.anymail_json.ResendBackend"
    api_url_setting = "RESEND_API_URL"
    domains_path = "domains"
    # Listing domains needs a full access key (a sending-only one gets 401 restricted_api_key), which NotifyHub
    # needs anyway to register the sending domain: https://resend.com/docs/api-reference/domains/list-domains and
    # https://resend.com/docs/api-reference/errors
    key_check_path = domains_path

    def carried(self, email: OutgoingEmail) -> OutgoingEmail:
        """Each attachment under the type its filename names, where the name has a type Resend knows: Resend leaves a
        message whose attachment names another type queued for ever, and anymail refuses to send one
        (https://github.com/anymail/django-anymail/pull/451)."""
        attachments = tuple(_named_type(attachment) for attachment in email.attachments)
        return replace(email, attachments=attachments) if attachments != email.attachments else email

    def error_detail(self, body: Any) -> str | None:
        return top_level_message(body, "message")

    def headers_carried(self, headers: dict[str, str]) -> dict[str, str]:
        """Without a client's own ``X-Tags`` or ``X-Metadata`` (any case): the message's tags and metadata, whose
        ``job_id`` Resend's events are matched by, travel under those names."""
        if not headers:
            return headers
        return {name: value for name, value in headers.items() if name.lower() not in TRACKING_HEADERS}

    def create_body(self, name: str) -> dict[str, Any]:
        return {"name": name}

    def find_domain(self, name: str, credentials: Credentials) -> dict[str, Any] | None:
        listed = (self.call("GET", self.domains_path, credentials) or {}).get("data") or []
        match = next((domain for domain in listed if domain.get("name") == name), None)
        return self._read(str(match["id"]), credentials) if match else None

    def _read(self, domain_id: str, credentials: Credentials) -> dict[str, Any]:
        body: dict[str, Any] = self.call("GET", f"{self.domains_path}/{domain_id}", credentials)
        return body

    def domain_state(self, body: dict[str, Any], name: str) -> DomainState:
        records = [
            DnsRecord(
                type=str(record["type"]).upper(),
                host=record_host(str(record["name"]), name),
                value=str(record["value"]),
                priority=record.get("priority"),
            )
            for record in body.get("records") or []
            if record.get("record") in SENDING_RECORDS
        ]
        return DomainState(
            provider_domain_id=str(body["id"]), records=records, verified=body.get("status") == "verified"
        )

    def domain_verify(self, domain_id: str, credentials: Credentials) -> Verification:
        self.call("POST", f"{self.domains_path}/{domain_id}/verify", credentials)
        body = self._read(domain_id, credentials)
        if body.get("status") == "verified":
            return Verification(verified=True)
        pending = [
            f"{record.get('record')} {record.get('type')} record {record.get('status')}"
            for record in body.get("records") or []
            if record.get("record") in SENDING_RECORDS and record.get("status") != "verified"
        ]
        return Verification(verified=False, reasons=pending or [f"domain status is {body.get('status')}"])


def record_host(record_name: str, domain: str) -> str:
    """The record's full DNS name.

    Resend names records relative to the zone apex: for ``em.example.com`` it answers
    ``send.em`` and ``resend._domainkey.em``. The part of ``domain`` left of the apex is
    the record name's tail, whatever the apex's length (``example.co.uk`` too).
    """
    if record_name in ("", "@"):
        return domain
    if record_name == domain or record_name.endswith("." + domain):
        return record_name
    labels = domain.split(".")
    for split in range(len(labels) - 1, 0, -1):
        below_apex, apex = ".".join(labels[:split]), ".".join(labels[split:])
        if record_name == below_apex or record_name.endswith("." + below_apex):
            return f"{record_name}.{apex}"
    return f"{record_name}.{domain}"


def _named_type(attachment: EmailAttachment) -> EmailAttachment:
    # The guess anymail checks the type against (backends/resend.py, make_attachment).
    named, _ = mimetypes.guess_type(attachment.filename)
    return attachment if named is None or named == attachment.content_type else replace(attachment, content_type=named)
