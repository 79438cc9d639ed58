"""Postmark: email through anymail with a server token; domains with the account token.

https://postmarkapp.com/developer/api/domains-api
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from providers.base import (
    Credentials,
    DnsRecord,
    DomainState,
    EmailProvider,
    KeyCheck,
    Verification,
    metadata_within,
    top_level_message,
)

MISSING_ACCOUNT_TOKEN = "No account token configured; Postmark needs it for domain operations"

# Postmark's custom metadata: at most 10 fields, names up to 20 characters (no two alike but for case), values up
# to 80 (https://postmarkapp.com/support/article/1125-custom-metadata-faq).
METADATA_FIELDS, METADATA_NAME_LENGTH, METADATA_VALUE_LENGTH = 10, 20, 80


class Postmark(EmailProvider):
    name = "POSTMARK"
    anymail_backend = "providers.anymail_json.PostmarkBackend"
    credential_kwarg = "server_token"
    api_url_setting = "POSTMARK_API_URL"
    domains_path = "domains"

    def error_detail(self, body: Any) -> str | None:
        return top_level_message(body, "Message")

    def tags_carried(self, tags: Sequence[str]) -> list[str]:
        # A message has one Tag (https://postmarkapp.com/developer/api/email-api); anymail refuses more.
        return list(tags[:1])

    def metadata_carried(self, metadata: dict[str, str]) -> dict[str, str]:
        """``job_id`` and the client's fields Postmark takes, up to its 10; one it would refuse (a longer name or
        value, a name already kept in another case) is left out rather than fail the message."""
        return metadata_within(metadata, _postmark_admits)

    def auth_headers(self, credentials: Credentials) -> dict[str, str]:
        # Postmark refuses the server token on account-level endpoints such as /domains.
        return {"X-Postmark-Account-Token": credentials.account_token or ""}

    def key_checks(self, credentials: Credentials) -> list[KeyCheck]:
        # The server token reads its own server (https://postmarkapp.com/developer/api/server-api); the account
        # token, when given, one page of the domains list it is kept for (https://postmarkapp.com/developer/api/domains-api).
        checks = [KeyCheck("api_key", "server", {"X-Postmark-Server-Token": credentials.api_key})]
        if credentials.account_token:
            path = f"{self.domains_path}?count=1&offset=0"
            checks.append(KeyCheck("account_token", path, self.auth_headers(credentials)))
        return checks

    def missing_domain_credentials(self, credentials: Credentials) -> str | None:
        return None if credentials.account_token else MISSING_ACCOUNT_TOKEN

    def create_body(self, name: str) -> dict[str, Any]:
        return {"Name": name, "ReturnPathDomain": f"pm-bounces.{name}"}

    def find_domain(self, name: str, credentials: Credentials) -> dict[str, Any] | None:
        listed = (self.call("GET", f"{self.domains_path}?count=500&offset=0", credentials) or {}).get("Domains") or []
        match = next((domain for domain in listed if domain.get("Name") == name), None)
        if match is None:
            return None
        body: dict[str, Any] = self.call("GET", f"{self.domains_path}/{match['ID']}", credentials)
        return body

    def domain_state(self, body: dict[str, Any], name: str) -> DomainState:
        records = []
        # A new key waits under the "pending" fields until Postmark has seen it in DNS.
        dkim_host = body.get("DKIMPendingHost") or body.get("DKIMHost")
        dkim_value = body.get("DKIMPendingTextValue") or body.get("DKIMTextValue")
        if dkim_host and dkim_value:
            records.append(DnsRecord(type="TXT", host=dkim_host, value=dkim_value))
        if body.get("ReturnPathDomain") and body.get("ReturnPathDomainCNAMEValue"):
            records.append(
                DnsRecord(type="CNAME", host=body["ReturnPathDomain"], value=body["ReturnPathDomainCNAMEValue"])
            )
        return DomainState(provider_domain_id=str(body["ID"]), records=records, verified=_verified(body))

    def domain_verify(self, domain_id: str, credentials: Credentials) -> Verification:
        dkim = self.call("PUT", f"{self.domains_path}/{domain_id}/verifyDkim", credentials)
        return_path = self.call("PUT", f"{self.domains_path}/{domain_id}/verifyReturnPath", credentials)
        reasons = []
        if not dkim.get("DKIMVerified"):
            reasons.append("DKIM record not verified")
        if not return_path.get("ReturnPathDomainVerified"):
            reasons.append("Return-Path CNAME not verified")
        return Verification(verified=not reasons, reasons=reasons)


def _postmark_admits(kept: dict[str, str], name: str, value: str) -> bool:
    if len(kept) == METADATA_FIELDS or len(name) > METADATA_NAME_LENGTH or len(value) > METADATA_VALUE_LENGTH:
        return False
    return name.lower() not in {kept_name.lower() for kept_name in kept}


def _verified(body: dict[str, Any]) -> bool:
    return bool(body.get("DKIMVerified") and body.get("ReturnPathDomainVerified"))
