"""SendGrid: v3 mail send through anymail; domain authentication under ``/v3/whitelabel/domains``.

https://www.twilio.com/docs/sendgrid/api-reference/domain-authentication
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.core.mail import EmailMultiAlternatives

from providers.base import Credentials, DnsRecord, DomainState, EmailProvider, Verification, metadata_within

# A message's custom arguments may total at most 10,000 bytes
# (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send, custom_args); anymail adds its own
# ``anymail_id`` (a UUID) beside NotifyHub's, which this leaves room for.
CUSTOM_ARGS_BYTES = 10_000 - len("anymail_id") - 36


class SendGrid(EmailProvider):
    name = "SENDGRID"
    anymail_backend = "providers.anymail_json.SendGridBackend"
    api_url_setting = "SENDGRID_API_URL"
    domains_path = "whitelabel/domains"
    # Lists the scopes of the key that calls it, so any valid key may call it:
    # https://www.twilio.com/docs/sendgrid/api-reference/api-key-permissions/retrieve-a-list-of-scopes-for-which-this-user-has-access
    key_check_path = "scopes"

    def message_id(self, message: EmailMultiAlternatives) -> str | None:
        # SendGrid's events name the message by sg_message_id, which begins with the X-Message-Id
        # of the send (https://www.twilio.com/docs/sendgrid/glossary/message-id); anymail's own id
        # travels only in the custom args.
        response = message.anymail_status.esp_response  # type: ignore[attr-defined]
        sent_id = response.headers.get("X-Message-Id") if response is not None else None
        return sent_id or super().message_id(message)

    def metadata_carried(self, metadata: dict[str, str]) -> dict[str, str]:
        """``job_id`` and the client's arguments that fit in SendGrid's 10,000 bytes, in their order; one that
        would not fit is left out rather than fail the message."""
        return metadata_within(metadata, _fits_custom_args)

    def error_detail(self, body: Any) -> str | None:
        errors = body.get("errors") if isinstance(body, dict) else None
        messages = [str(error.get("message")) for error in errors or [] if isinstance(error, dict)]
        return "; ".join(messages) or None

    def create_body(self, name: str) -> dict[str, Any]:
        return {"domain": name, "automatic_security": True}

    def find_domain(self, name: str, credentials: Credentials) -> dict[str, Any] | None:
        found = self.call("GET", f"{self.domains_path}?domain={quote(name)}", credentials) or []
        return next((domain for domain in found if domain.get("domain") == name), None)

    def domain_state(self, body: dict[str, Any], name: str) -> DomainState:
        records = [
            DnsRecord(type=str(entry["type"]).upper(), host=entry["host"], value=entry["data"])
            for entry in (body.get("dns") or {}).values()
        ]
        return DomainState(provider_domain_id=str(body["id"]), records=records, verified=bool(body.get("valid")))

    def domain_verify(self, domain_id: str, credentials: Credentials) -> Verification:
        result = self.call("POST", f"{self.domains_path}/{domain_id}/validate", credentials)
        checks = (result.get("validation_results") or {}).items()
        reasons = [f"{record}: {check.get('reason')}" for record, check in checks if not check.get("valid")]
        return Verification(verified=bool(result.get("valid")), reasons=reasons)


def custom_args_bytes(arguments: dict[str, str]) -> int:
    return sum(len(name.encode()) + len(value.encode()) for name, value in arguments.items())


def _fits_custom_args(kept: dict[str, str], name: str, value: str) -> bool:
    return custom_args_bytes(kept) + len(name.encode()) + len(value.encode()) <= CUSTOM_ARGS_BYTES
