"""Local fakes of the SendGrid, Resend and Postmark HTTP APIs, strict enough to fail like the real ones.

Each fake is a real HTTP server on 127.0.0.1 that speaks its provider's request and response formats:
paths relative to the base URL django-anymail and NotifyHub's domain clients post to, auth headers,
status codes and error bodies. Point ``settings.<NAME>_API_URL`` at ``fake.url``.

    with FakeResend() as resend:          # FakeResend().speak_tls(ca) for HTTPS
        resend.accept_key("re_test")
        resend.fail(429)                  # the next send is rate limited
        resend.mark_verified("em.example.com")

Sources for the shapes (checked for django-anymail 15.2 and the providers' references):
- SendGrid: https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/errors and
  the OpenAPI files of twilio/sendgrid-oai (tsg_mail_v3, tsg_domain_authentication_v3).
- Resend: https://resend.com/docs/api-reference/errors and resend/resend-openapi (resend.yaml).
- Postmark: https://postmarkapp.com/developer/api/overview and .../developer/api/domains-api.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
import secrets
import threading
import traceback
import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, Self
from urllib.parse import parse_qsl, urlsplit

import trustme

from tests.fakes.connections import CountingServer, server_tls


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # the request path as received, e.g. "/v3/mail/send"
    query: dict[str, str]
    headers: dict[str, str]  # names compare case-insensitively
    json: Any  # the parsed body, or None when empty or not JSON


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any = None  # serialised as JSON; None sends an empty body
    headers: dict[str, str] = field(default_factory=dict)


class Headers(dict[str, str]):
    """HTTP header names are case-insensitive: ``headers["authorization"]`` finds ``Authorization``."""

    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        super().__init__((name.lower(), value) for name, value in items)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)


class DomainTable(dict[str, dict[str, Any]]):
    """Domains keyed by the provider's id as text; SendGrid's and Postmark's integer ids find them too."""

    def __getitem__(self, key: object) -> dict[str, Any]:
        return super().__getitem__(str(key))

    def __setitem__(self, key: object, value: dict[str, Any]) -> None:
        super().__setitem__(str(key), value)

    def __delitem__(self, key: object) -> None:
        super().__delitem__(str(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(str(key))

    def get(self, key: object, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(str(key), default)


class FakeProvider:
    """Threading, routing, recording, auth and failure injection; subclasses supply the API."""

    name: ClassVar[str]
    prefix: ClassVar[str] = "/"
    # (method, path pattern relative to the prefix, endpoint name for fail()/hang(), handler method). The endpoint
    # names: "send", "key_check" (the cheap authenticated read NotifyHub checks a new key with; Resend's is its
    # "domain_list"), "domain_create", "domain_get", "domain_list", "domain_verify", "domain_delete".
    routes: ClassVar[tuple[tuple[str, str, str, str], ...]]

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.domains = DomainTable()
        self._sent: list[Call] = []
        # What the provider knows of each message it accepted, to report events on it (tests/fakes/events.py).
        self.accepted: list[dict[str, Any]] = []
        self._keys: set[str] = set()
        self._verified: set[str] = set()
        # Only this provider's endpoints: a failure queued for one it lacks would wait for ever, unnoticed.
        endpoints = dict.fromkeys(endpoint for _, _, endpoint, _ in self.routes)
        self._failures: dict[str, deque[int]] = {endpoint: deque() for endpoint in endpoints}
        self._hangs: dict[str, deque[float]] = {endpoint: deque() for endpoint in endpoints}
        self._ids = itertools.count(1001)
        self._lock = threading.RLock()
        self._closing = threading.Event()
        self._routes = [
            (method, re.compile(path), endpoint, handler) for method, path, endpoint, handler in self.routes
        ]
        self._server = _Server(self)
        # A short poll interval keeps __exit__ (shutdown) quick.
        serve = {"poll_interval": 0.05}
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs=serve, daemon=True)

    # --- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # wakes requests held by hang()
        self._server.shutdown()
        self._server.server_close()
        # A client keeping a connection must not reach a stopped fake through it.
        self._server.hang_up()

    def speak_tls(self, ca: trustme.CA) -> Self:
        """Serves HTTPS, with a certificate ``ca`` issued; call before ``__enter__``."""
        self._server.tls = server_tls(ca)
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        scheme = "http" if self._server.tls is None else "https"
        return f"{scheme}://{host}:{port}{self.prefix}"

    @property
    def connections(self) -> int:
        """TCP connections accepted so far: fewer than requests when clients keep them."""
        return self._server.connections

    def hang_up(self) -> None:
        """Closes every open connection, as a provider's idle timeout does."""
        self._server.hang_up()

    # --- test controls ------------------------------------------------------------------
    def accept_key(self, key: str) -> None:
        self._keys.add(key)

    def fail(self, status: int, *, times: int = 1, endpoint: str = "send") -> None:
        with self._lock:
            self._queue(self._failures, endpoint).extend([status] * times)

    def hang(self, seconds: float, *, times: int = 1, endpoint: str = "send") -> None:
        with self._lock:
            self._queue(self._hangs, endpoint).extend([seconds] * times)

    def mark_verified(self, domain_name: str) -> None:
        with self._lock:
            self._verified.add(domain_name.lower())

    @property
    def sent(self) -> list[Call]:
        with self._lock:
            return list(self._sent)

    @staticmethod
    def _queue(queues: dict[str, deque[Any]], endpoint: str) -> deque[Any]:
        if endpoint not in queues:
            raise ValueError(f"unknown endpoint {endpoint!r}; expected one of {', '.join(queues)}")
        return queues[endpoint]

    # --- request handling ---------------------------------------------------------------
    def respond(self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes) -> Reply:
        url = urlsplit(target)
        call = Call(method, url.path, dict(parse_qsl(url.query)), Headers(headers), _parse_json(body))
        with self._lock:
            self.calls.append(call)
        relative = url.path[len(self.prefix) :] if url.path.startswith(self.prefix) else None
        found = [(route, m) for route in self._routes if relative is not None and (m := route[1].fullmatch(relative))]
        if not found:
            return self._not_found(call)
        chosen = next(((route, m) for route, m in found if route[0] == method), None)
        if chosen is None:
            return self._not_allowed(call)
        (_, _, endpoint, handler), match = chosen
        delay, status = self._injected(endpoint)
        if delay:
            self._closing.wait(delay)
        if status is not None:
            return self._error(status)
        refusal = self._authorize(call, endpoint)
        if refusal is not None:
            return refusal
        with self._lock:
            reply: Reply = getattr(self, handler)(call, *match.groups())
            if endpoint == "send" and reply.status < 300:
                self._sent.append(call)
        return reply

    def _injected(self, endpoint: str) -> tuple[float, int | None]:
        with self._lock:
            hangs, failures = self._hangs[endpoint], self._failures[endpoint]
            return (hangs.popleft() if hangs else 0.0), (failures.popleft() if failures else None)

    def _verified_name(self, name: str) -> bool:
        return name.lower() in self._verified

    def _next_id(self) -> int:
        return next(self._ids)

    # --- provider specifics ---------------------------------------------------------------
    def _authorize(self, call: Call, endpoint: str) -> Reply | None:
        raise NotImplementedError

    def _error(self, status: int, message: str | None = None) -> Reply:
        raise NotImplementedError

    def _not_found(self, call: Call) -> Reply:
        return self._error(404)

    def _not_allowed(self, call: Call) -> Reply:
        return self._error(405)


# ======================================================================================
# SendGrid v3: https://www.twilio.com/docs/sendgrid/api-reference
# ======================================================================================
class FakeSendGrid(FakeProvider):
    name = "SENDGRID"
    prefix = "/v3/"
    user_id = 123
    routes = (
        ("POST", r"mail/send", "send", "_send"),
        ("GET", r"scopes", "key_check", "_scopes"),
        ("POST", r"whitelabel/domains", "domain_create", "_create"),
        ("GET", r"whitelabel/domains", "domain_list", "_list"),
        ("GET", r"whitelabel/domains/(\d+)", "domain_get", "_get"),
        ("DELETE", r"whitelabel/domains/(\d+)", "domain_delete", "_delete"),
        ("POST", r"whitelabel/domains/(\d+)/validate", "domain_verify", "_validate"),
    )
    # Messages from the v3 errors page and tsg_mail_v3's examples; 401 from SendGrid's 4XX support article.
    messages: ClassVar[dict[int, str]] = {
        400: "invalid request",
        401: "The provided authorization grant is invalid, expired, or revoked",
        403: "access forbidden",
        404: "not found",
        405: "method not allowed",
        413: "content too large",
        429: "too many requests",
        500: "internal server error",
    }

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[str, str] = {}  # domain id -> the full name NotifyHub registered

    def _authorize(self, call: Call, endpoint: str) -> Reply | None:
        scheme, _, key = call.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not key:
            return self._error(401, "authorization required")
        return None if key in self._keys else self._error(401)

    def _error(self, status: int, message: str | None = None, *, field: str | None = None) -> Reply:
        text = message or self.messages.get(status) or ("internal server error" if status >= 500 else "bad request")
        headers = {"X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60"}
        body = {"errors": [{"field": field, "message": text, "help": None}]}
        return Reply(status, body, headers if status == 429 else {})

    # POST mail/send: 202, empty body, X-Message-Id. anymail reads nothing else.
    def _send(self, call: Call) -> Reply:
        mail = call.json
        if not isinstance(mail, dict):
            return self._error(400, "Bad Request")
        problems = list(_sendgrid_mail_problems(mail))
        if problems:
            return Reply(400, {"errors": problems})
        message_id = secrets.token_urlsafe(16)[:22]
        self.accepted.append({"X-Message-Id": message_id, "personalizations": mail.get("personalizations")})
        return Reply(202, None, {"X-Message-Id": message_id})

    # GET scopes: 200 {"scopes": [...]}, the scopes of the key that asks (tsg_scopes_v3's ListScope).
    def _scopes(self, call: Call) -> Reply:
        return Reply(200, {"scopes": list(SENDGRID_FULL_ACCESS_SCOPES)})

    def _create(self, call: Call) -> Reply:
        body = call.json
        if not isinstance(body, dict):
            return self._error(400, "Bad Request")
        domain, subdomain = body.get("domain"), body.get("subdomain")
        if not isinstance(domain, str) or not domain:
            return self._error(400, "domain is required", field="domain")
        full_name = (f"{subdomain}.{domain}" if subdomain else domain).lower()
        if full_name in self._names.values():
            # Not quoted in the docs: the real API answers a duplicate with a 400 errors array.
            return self._error(400, "A domain with this domain and subdomain already exists", field="domain")
        domain_id = self._next_id()
        subdomain = subdomain or f"em{domain_id}"  # SendGrid picks "em<digits>" when none is given
        automatic = bool(body.get("automatic_security", True))
        self.domains[domain_id] = {
            "id": domain_id,
            "user_id": self.user_id,
            "subdomain": subdomain,
            "domain": domain,
            "username": "notifyhub",
            "ips": list(body.get("ips") or []),
            "custom_spf": bool(body.get("custom_spf", False)),
            "default": bool(body.get("default", False)),
            "legacy": False,
            "automatic_security": automatic,
            "valid": False,
            "dns": self._dns(subdomain, domain, automatic),
        }
        self._names[str(domain_id)] = full_name
        return Reply(201, self.domains[domain_id])

    def _dns(self, subdomain: str, domain: str, automatic: bool) -> dict[str, dict[str, Any]]:
        wl = f"u{self.user_id}.wl.sendgrid.net"
        if automatic:  # three CNAMEs, as in the "Authenticate a domain" example
            records = {
                "mail_cname": ("cname", f"{subdomain}.{domain}", wl),
                "dkim1": ("cname", f"s1._domainkey.{domain}", f"s1.domainkey.{wl}"),
                "dkim2": ("cname", f"s2._domainkey.{domain}", f"s2.domainkey.{wl}"),
            }
        else:  # manual security: an MX and two TXT records
            records = {
                "mail_server": ("mx", f"{subdomain}.{domain}", "mx.sendgrid.net"),
                "subdomain_spf": ("txt", f"{subdomain}.{domain}", "v=spf1 include:sendgrid.net ~all"),
                "dkim": ("txt", f"m1._domainkey.{domain}", f"k=rsa; t=s; p={_public_key()}"),
            }
        return {
            key: {"valid": False, "type": t, "host": host, "data": data} for key, (t, host, data) in records.items()
        }

    def _list(self, call: Call) -> Reply:
        wanted = call.query.get("domain", "").lower()
        found = [
            domain
            for key, domain in self.domains.items()
            if not wanted or wanted in (domain["domain"].lower(), self._names[key])
        ]
        offset, limit = int(call.query.get("offset") or 0), int(call.query.get("limit") or len(found) or 1)
        return Reply(200, found[offset : offset + limit])

    def _get(self, call: Call, domain_id: str) -> Reply:
        domain = self.domains.get(domain_id)
        return Reply(200, domain) if domain else self._missing()

    def _delete(self, call: Call, domain_id: str) -> Reply:
        if domain_id not in self.domains:
            return self._missing()
        del self.domains[domain_id]
        del self._names[domain_id]
        return Reply(204)

    def _validate(self, call: Call, domain_id: str) -> Reply:
        domain = self.domains.get(domain_id)
        if domain is None:
            return self._missing()
        valid = self._verified_name(self._names[domain_id])
        domain["valid"] = valid
        results = {}
        for key, record in domain["dns"].items():
            record["valid"] = valid
            results[key] = {"valid": valid, "reason": None if valid else _sendgrid_reason(record)}
        return Reply(200, {"id": domain["id"], "valid": valid, "validation_results": results})

    def _missing(self) -> Reply:
        return self._error(404, "authenticated domain not found")


# What a full access key lists, cut to the scopes NotifyHub uses.
SENDGRID_FULL_ACCESS_SCOPES = (
    "mail.send",
    "scopes.read",
    "whitelabel.create",
    "whitelabel.delete",
    "whitelabel.read",
    "whitelabel.update",
)


def _sendgrid_reason(record: dict[str, Any]) -> str:
    if record["type"] == "cname":
        return f'Expected CNAME for "{record["host"]}" to match "{record["data"]}".'
    if record["type"] == "mx":
        return f'Expected your MX record to be "{record["data"]}" but found no MX record.'
    return f'Expected TXT record for "{record["host"]}" to match "{record["data"]}".'


def _sendgrid_mail_problems(mail: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """The v3 mail/send checks, with SendGrid's messages."""

    def problem(field: str | None, message: str) -> dict[str, Any]:
        return {"message": message, "field": field, "help": None}

    personalizations = mail.get("personalizations")
    if not isinstance(personalizations, list) or not personalizations:
        yield problem(
            "personalizations",
            "The personalizations field is required and must have at least one personalization.",
        )
        personalizations = []
    for index, personalization in enumerate(personalizations):
        to = personalization.get("to") if isinstance(personalization, dict) else None
        if not isinstance(to, list) or not to or not all(isinstance(r, dict) and r.get("email") for r in to):
            yield problem(
                f"personalizations.{index}.to",
                "The to array is required for all personalization objects, and must have at least one email "
                "object with a valid email address.",
            )
    if not isinstance(mail.get("from"), dict) or not mail["from"].get("email"):
        yield problem(
            "from.email",
            "The from object must be provided for every email send. It is an object that requires the email "
            "parameter, but may also contain a name parameter.",
        )
    templated = bool(mail.get("template_id"))
    every_subject = all(isinstance(p, dict) and p.get("subject") for p in personalizations) and personalizations
    if not mail.get("subject") and not templated and not every_subject:
        yield problem(
            "subject",
            "The subject is required. You can get around this requirement if you use a template with a subject "
            "defined or if every personalization has a subject defined.",
        )
    if not mail.get("content") and not templated:
        yield problem(
            "content",
            "Unless a valid template_id is provided, the content parameter is required. There must be at least "
            "one defined content block.",
        )
    # From the mail send errors page (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/errors).
    for index, personalization in enumerate(personalizations):
        addresses = [
            str(recipient.get("email", "")).lower()
            for kind in ("to", "cc", "bcc")
            for recipient in (personalization.get(kind) or [] if isinstance(personalization, dict) else [])
            if isinstance(recipient, dict)
        ]
        if len(set(addresses)) < len(addresses):
            yield problem(
                f"personalizations.{index}",
                "Each unique email address in the personalizations array should only be included once. You have "
                "included email address more than once.",
            )
    if len(mail.get("categories") or []) > 10:
        yield problem("categories", "You may not have more than 10 categories per request.")
    yield from (problem(field, message) for field, message in _sendgrid_attachment_problems(mail))
    # anymail (backends/sendgrid.py, transform_metadata): non-string custom_args get this cryptic answer.
    custom_args = [mail.get("custom_args") or {}] + [
        p.get("custom_args") or {} for p in personalizations if isinstance(p, dict)
    ]
    if any(not isinstance(value, str) for args in custom_args for value in args.values()):
        yield problem(None, "Bad Request")
    # "Total custom_args size may not exceed 10,000 bytes" (tsg_mail_v3); the message is the fake's own.
    elif sum(len(name.encode()) + len(value.encode()) for args in custom_args for name, value in args.items()) > 10_000:
        yield problem("custom_args", "The custom_args may total at most 10,000 bytes.")


def _sendgrid_attachment_problems(mail: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """The v3 mail/send attachment checks: `{content, filename, type?, disposition?, content_id?}`, content base64,
    a content_id for an inline one (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send)."""
    for index, attachment in enumerate(mail.get("attachments") or []):
        if not attachment.get("filename"):
            yield f"attachments.{index}.filename", "The attachment filename parameter is required."
        if not _is_base64(attachment.get("content")):
            yield f"attachments.{index}.content", "The attachment content must be base64 encoded."
        if attachment.get("disposition") == "inline" and not attachment.get("content_id"):
            yield (
                f"attachments.{index}.content_id",
                "The content_id parameter is required if disposition is set to inline.",
            )


# ======================================================================================
# Resend: https://resend.com/docs/api-reference
# ======================================================================================
class FakeResend(FakeProvider):
    name = "RESEND"
    routes = (
        ("POST", r"emails", "send", "_send"),
        ("POST", r"domains", "domain_create", "_create"),
        ("GET", r"domains", "domain_list", "_list"),
        ("GET", r"domains/([^/]+)", "domain_get", "_get"),
        ("DELETE", r"domains/([^/]+)", "domain_delete", "_delete"),
        ("POST", r"domains/([^/]+)/verify", "domain_verify", "_verify"),
    )
    # status -> (name, message), from https://resend.com/docs/api-reference/errors
    errors: ClassVar[dict[int, tuple[str, str]]] = {
        400: ("validation_error", "We found an error with one or more fields in the request."),
        401: ("missing_api_key", "Missing API key in the authorization header."),
        403: ("invalid_api_key", "API key is invalid."),
        404: ("not_found", "The requested endpoint does not exist."),
        405: ("method_not_allowed", "Method is not allowed for the requested path."),
        409: ("invalid_idempotent_request", "Same idempotency key used with a different request payload."),
        422: ("missing_required_field", "The request body is missing one or more required fields."),
        429: (
            "rate_limit_exceeded",
            "Too many requests. Please limit the number of requests per second. Or contact support to increase "
            "rate limit.",
        ),
        500: ("application_error", "An unexpected error occurred."),
    }
    regions = ("us-east-1", "eu-west-1", "sa-east-1", "ap-northeast-1")

    def __init__(self, *, receiving: bool = False) -> None:
        """``receiving``: new domains get the receiving capability, and with it a "Receiving" MX record."""
        super().__init__()
        self._receiving = receiving
        self._sending_keys: set[str] = set()

    def accept_sending_key(self, key: str) -> None:
        """A key made with "Sending access": it sends, and every other endpoint refuses it."""
        self._sending_keys.add(key)

    def _authorize(self, call: Call, endpoint: str) -> Reply | None:
        scheme, _, key = call.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not key:
            return self._error(401)
        if key in self._sending_keys:
            restricted = "This API key is restricted to only send emails."
            return None if endpoint == "send" else self._error(401, restricted, "restricted_api_key")
        return None if key in self._keys else self._error(403)

    def _error(self, status: int, message: str | None = None, name: str | None = None) -> Reply:
        default_name, default_message = self.errors.get(
            status, ("application_error", "An unexpected error occurred.") if status >= 500 else self.errors[400]
        )
        body = {"statusCode": status, "message": message or default_message, "name": name or default_name}
        headers = {"retry-after": "1", "ratelimit-limit": "2", "ratelimit-remaining": "0", "ratelimit-reset": "1"}
        return Reply(status, body, headers if status == 429 else {})

    def _send(self, call: Call) -> Reply:
        mail = call.json
        if not isinstance(mail, dict):
            return self._error(400, "Invalid JSON body.")
        for required in ("from", "to", "subject"):
            if not mail.get(required):
                return self._error(422, f"Missing `{required}` field.")
        if not any(mail.get(body) for body in ("html", "text", "react", "template")):
            return self._error(422, "Missing `html` or `text` field.")
        # anymail (backends/resend.py, set_extra_headers): header values must be strings.
        if any(not isinstance(value, str) for value in (mail.get("headers") or {}).values()):
            return self._error(422, "The `headers` values must be strings.", "validation_error")
        for attachment in mail.get("attachments") or []:
            if not attachment.get("filename") or not _is_base64(attachment.get("content")):
                # https://resend.com/docs/api-reference/emails/send-email: `content` (base64) and `filename`.
                return self._error(422, "Attachments must have a filename and base64 content.", "validation_error")
        if not all(_resend_tag_ok(tag) for tag in mail.get("tags") or []):
            message = "Tags should only contain ASCII letters, numbers, underscores, or dashes."
            return self._error(422, message, "validation_error")
        email_id = str(uuid.uuid4())
        self.accepted.append({"id": email_id, "to": mail["to"], "headers": mail.get("headers") or {}})
        return Reply(200, {"id": email_id})

    def _create(self, call: Call) -> Reply:
        body = call.json
        if not isinstance(body, dict):
            return self._error(400, "Invalid JSON body.")
        name, region = body.get("name"), body.get("region", "us-east-1")
        if not isinstance(name, str) or not name:
            return self._error(422, "Missing `name` field.")
        if region not in self.regions:
            message = "Region must be " + " | ".join(f'"{r}"' for r in self.regions) + "."
            return self._error(422, message, "invalid_region")
        if any(domain["name"].lower() == name.lower() for domain in self.domains.values()):
            # Not on the errors page; reported by Resend users for a name already added.
            return self._error(403, f"The {name} domain has been registered already.", "validation_error")
        receiving = "enabled" if self._receiving else "disabled"
        capabilities = {"sending": "enabled", "receiving": receiving, **(body.get("capabilities") or {})}
        domain_id = str(uuid.uuid4())
        self.domains[domain_id] = {
            "object": "domain",
            "id": domain_id,
            "name": name,
            "status": "not_started",
            "created_at": _now(),
            "region": region,
            "capabilities": capabilities,
            "records": _resend_records(name, region, body.get("custom_return_path") or "send", capabilities),
        }
        return Reply(201, self.domains[domain_id])

    def _list(self, call: Call) -> Reply:
        keys = ("id", "name", "status", "created_at", "region", "capabilities")
        data = [{key: domain[key] for key in keys} for domain in self.domains.values()]
        return Reply(200, {"object": "list", "has_more": False, "data": data})

    def _get(self, call: Call, domain_id: str) -> Reply:
        return self._find(domain_id) or Reply(200, self.domains[domain_id])

    def _verify(self, call: Call, domain_id: str) -> Reply:
        refusal = self._find(domain_id)
        if refusal:
            return refusal
        domain = self.domains[domain_id]
        domain["status"] = "verified" if self._verified_name(domain["name"]) else "pending"
        for record in domain["records"]:
            record["status"] = domain["status"]
        return Reply(200, {"object": "domain", "id": domain_id})

    def _delete(self, call: Call, domain_id: str) -> Reply:
        refusal = self._find(domain_id)
        if refusal:
            return refusal
        del self.domains[domain_id]
        return Reply(200, {"object": "domain", "id": domain_id, "deleted": True})

    def _find(self, domain_id: str) -> Reply | None:
        """None when the domain exists, else Resend's refusal."""
        try:
            uuid.UUID(domain_id)
        except ValueError:
            return self._error(422, "The parameter must be a valid UUID.", "invalid_parameter")
        return None if domain_id in self.domains else self._error(404, "Domain not found")


def _resend_tag_ok(tag: Any) -> bool:
    text = f"{tag.get('name', '')}{tag.get('value', '')}" if isinstance(tag, dict) else ""
    return bool(text) and re.fullmatch(r"[A-Za-z0-9_-]+", text) is not None


def _resend_records(name: str, region: str, return_path: str, capabilities: dict[str, str]) -> list[dict[str, Any]]:
    """Resend names records relative to the zone apex: for em.example.com, "send.em" and "resend._domainkey.em"."""
    below_apex = ".".join(name.split(".")[:-2])

    def relative(label: str) -> str:
        return f"{label}.{below_apex}" if below_apex else label

    def record(kind: str, label: str, dns_type: str, value: str, **extra: Any) -> dict[str, Any]:
        fields = {"record": kind, "name": label, "type": dns_type, "ttl": "Auto", "status": "not_started"}
        return {**fields, "value": value, **extra}

    records = [
        record("SPF", relative(return_path), "MX", f"feedback-smtp.{region}.amazonses.com", priority=10),
        record("SPF", relative(return_path), "TXT", '"v=spf1 include:amazonses.com ~all"'),
        record("DKIM", relative("resend._domainkey"), "TXT", f"p={_public_key()}"),
    ]
    if capabilities.get("receiving") == "enabled":
        records.append(
            record("Receiving", below_apex or "@", "MX", f"inbound-smtp.{region}.amazonaws.com", priority=10)
        )
    return records


# ======================================================================================
# Postmark: https://postmarkapp.com/developer/api/overview
# ======================================================================================
POSTMARK_NO_TOKEN = (
    "No Account or Server API tokens were supplied in the HTTP headers. Please add a header for either "
    "X-Postmark-Server-Token or X-Postmark-Account-Token."
)
POSTMARK_BAD_TOKEN = (
    "The {kind} Token you provided in the X-Postmark-{kind}-Token request header was invalid. "
    "Please verify that you are using a valid token."
)


class FakePostmark(FakeProvider):
    name = "POSTMARK"
    routes = (
        ("POST", r"email", "send", "_send"),
        ("GET", r"server", "key_check", "_server_details"),
        ("POST", r"domains/?", "domain_create", "_create"),
        ("GET", r"domains/?", "domain_list", "_list"),
        ("GET", r"domains/([^/]+)", "domain_get", "_get"),
        ("DELETE", r"domains/([^/]+)", "domain_delete", "_delete"),
        ("PUT", r"domains/([^/]+)/verifyDkim", "domain_verify", "_verify_dkim"),
        ("PUT", r"domains/([^/]+)/verifyReturnPath", "domain_verify", "_verify_return_path"),
    )
    # status -> (ErrorCode, Message); codes from the API overview's error-code table.
    errors: ClassVar[dict[int, tuple[int, str]]] = {
        400: (300, "Invalid email request"),
        401: (10, POSTMARK_NO_TOKEN),
        404: (510, "This domain was not found."),
        422: (300, "Invalid email request"),
        429: (429, "Rate limit exceeded."),
        503: (100, "Maintenance"),
    }

    def __init__(self) -> None:
        super().__init__()
        self._account_tokens: set[str] = set()

    def accept_account_token(self, token: str) -> None:
        self._account_tokens.add(token)

    def _authorize(self, call: Call, endpoint: str) -> Reply | None:
        # Sending and /server take a server token; /domains takes the account token and nothing else.
        server_level = endpoint in ("send", "key_check")
        kind, valid = ("Server", self._keys) if server_level else ("Account", self._account_tokens)
        token = call.headers.get(f"X-Postmark-{kind}-Token")
        if not token:
            return self._error(401, POSTMARK_NO_TOKEN)
        if token not in valid:
            return self._error(401, POSTMARK_BAD_TOKEN.format(kind=kind))
        content_type = call.headers.get("Content-Type", "")
        if call.json is not None and "json" not in content_type:
            message = "Content-Type and Accept headers must be set to application/json, text/json, or text/x-json."
            return self._error(422, message, code=409)
        return None

    def _error(self, status: int, message: str | None = None, *, code: int | None = None) -> Reply:
        if status >= 500 and status not in self.errors:
            # Postmark's API is ASP.NET; an unhandled failure answers with its default body.
            return Reply(status, {"Message": "An error has occurred."})
        default_code, default_message = self.errors.get(status, self.errors[422])
        body = {"ErrorCode": default_code if code is None else code, "Message": message or default_message}
        return Reply(status, body, {"Retry-After": "1"} if status == 429 else {})

    def _not_found(self, call: Call) -> Reply:
        return Reply(404, {"Message": f"No HTTP resource was found that matches the request URI '{call.path}'."})

    def _not_allowed(self, call: Call) -> Reply:
        return Reply(405, {"Message": f"The requested resource does not support http method '{call.method}'."})

    # POST email: 200 {"To", "SubmittedAt", "MessageID", "ErrorCode": 0, "Message": "OK"}; 422 with an
    # ErrorCode otherwise (anymail's backends/postmark.py parses both).
    def _send(self, call: Call) -> Reply:
        mail = call.json
        if not isinstance(mail, dict):
            return self._error(422, "Received invalid JSON input.", code=402)
        if not mail.get("From"):
            return self._error(422, "Invalid 'From' address: ''.", code=300)
        if not any(mail.get(field) for field in ("To", "Cc", "Bcc")):
            return self._error(422, "Zero recipients specified", code=300)
        if not (mail.get("TextBody") or mail.get("HtmlBody")):
            return self._error(422, "Provide either email TextBody or HtmlBody or both.", code=300)
        crowded = next((field for field in ("To", "Cc", "Bcc") if _postmark_count(mail.get(field)) > 50), None)
        if crowded:
            return self._error(422, f"Too many {crowded} recipients: at most 50 are allowed.", code=300)
        if not _postmark_headers_ok(mail.get("Headers")):
            return self._error(422, "Headers must be a list of Name and Value pairs.", code=300)
        if not isinstance(mail.get("Tag", ""), str):
            return self._error(422, "Tag must be a single string.", code=300)
        metadata = mail.get("Metadata") or {}
        if not _postmark_metadata_ok(metadata):
            return self._error(422, "Invalid metadata content. Up to 10 fields of 20 and 80 characters.", code=300)
        if problem := _postmark_attachment_problem(mail):
            return self._error(422, problem, code=300)
        message_id = str(uuid.uuid4())
        self.accepted.append({"MessageID": message_id, "To": mail.get("To", ""), "Metadata": metadata})
        return Reply(200, {"To": mail.get("To", ""), "SubmittedAt": _now(), "MessageID": message_id, **_OK})

    # GET server: the server the token belongs to (https://postmarkapp.com/developer/api/server-api).
    def _server_details(self, call: Call) -> Reply:
        inbound_hash = "61d363165df897131e3fd15"
        return Reply(
            200,
            {
                "ID": 1,
                "Name": "NotifyHub",
                "ApiTokens": [call.headers["X-Postmark-Server-Token"]],
                "Color": "blue",
                "SmtpApiActivated": True,
                "RawEmailEnabled": False,
                "DeliveryType": "Live",
                "ServerLink": "https://account.postmarkapp.com/servers/1/streams",
                "InboundAddress": f"{inbound_hash}@inbound.postmarkapp.com",
                "InboundHookUrl": "",
                "BounceHookUrl": "",
                "OpenHookUrl": "",
                "DeliveryHookUrl": "",
                "PostFirstOpenOnly": False,
                "InboundDomain": "",
                "InboundHash": inbound_hash,
                "InboundSpamThreshold": 0,
                "TrackOpens": False,
                "TrackLinks": "None",
                "IncludeBounceContentInHook": True,
                "ClickHookUrl": "",
                "EnableSmtpApiErrorHooks": False,
            },
        )

    def _create(self, call: Call) -> Reply:
        body = call.json
        if not isinstance(body, dict):
            return self._error(422, "Received invalid JSON input.", code=402)
        name, return_path = body.get("Name"), body.get("ReturnPathDomain") or ""
        if not isinstance(name, str) or not name:
            return self._error(422, "Name is a required field to create a Domain.", code=514)
        if any(domain["Name"].lower() == name.lower() for domain in self.domains.values()):
            return self._error(422, "Domain already exists.", code=512)
        if return_path and not return_path.lower().endswith("." + name.lower()):
            return self._error(422, "The Return-Path must be a subdomain of the domain.", code=511)
        domain_id = self._next_id()
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
        self.domains[domain_id] = {
            "ID": domain_id,
            "Name": name,
            "SPFVerified": False,
            "SPFHost": name,
            "SPFTextValue": "v=spf1 a mx include:spf.mtasv.net ~all",
            "DKIMVerified": False,
            "WeakDKIM": False,
            "DKIMHost": "",
            "DKIMTextValue": "",
            "DKIMPendingHost": f"{stamp}pm._domainkey.{name}",
            "DKIMPendingTextValue": f"k=rsa;p={_public_key()}",
            "DKIMRevokedHost": "",
            "DKIMRevokedTextValue": "",
            "SafeToRemoveRevokedKeyFromDNS": False,
            "DKIMUpdateStatus": "Pending",
            "ReturnPathDomain": return_path,
            "ReturnPathDomainVerified": False,
            "ReturnPathDomainCNAMEValue": "pm.mtasv.net",
        }
        return Reply(200, self.domains[domain_id])

    def _list(self, call: Call) -> Reply:
        count, offset = call.query.get("count", ""), call.query.get("offset", "")
        if not (count.isdigit() and offset.isdigit() and 0 < int(count) <= 500):
            return self._error(422, "The 'count' (at most 500) and 'offset' query parameters are required.", code=511)
        keys = ("Name", "SPFVerified", "DKIMVerified", "WeakDKIM", "ReturnPathDomainVerified", "ID")
        listed = [{key: domain[key] for key in keys} for domain in self.domains.values()]
        page = listed[int(offset) : int(offset) + int(count)]
        return Reply(200, {"TotalCount": len(listed), "Domains": page})

    def _get(self, call: Call, domain_id: str) -> Reply:
        domain = self.domains.get(domain_id)
        return Reply(200, domain) if domain else self._error(404)

    def _delete(self, call: Call, domain_id: str) -> Reply:
        domain = self.domains.get(domain_id)
        if domain is None:
            return self._error(404)
        del self.domains[domain_id]
        return Reply(200, {"ErrorCode": 0, "Message": f"Domain {domain['Name']} removed."})

    def _verify_dkim(self, call: Call, domain_id: str) -> Reply:
        domain = self.domains.get(domain_id)
        if domain is None:
            return self._error(404)
        if self._verified_name(domain["Name"]) and domain["DKIMPendingHost"]:
            # The pending key becomes the active one, as the real API reports after a successful check.
            domain["DKIMHost"], domain["DKIMTextValue"] = domain["DKIMPendingHost"], domain["DKIMPendingTextValue"]
            domain["DKIMPendingHost"] = domain["DKIMPendingTextValue"] = ""
            domain["DKIMVerified"], domain["DKIMUpdateStatus"] = True, "Verified"
        return Reply(200, domain)

    def _verify_return_path(self, call: Call, domain_id: str) -> Reply:
        domain = self.domains.get(domain_id)
        if domain is None:
            return self._error(404)
        if self._verified_name(domain["Name"]) and domain["ReturnPathDomain"]:
            domain["ReturnPathDomainVerified"] = True
        return Reply(200, domain)


_OK = {"ErrorCode": 0, "Message": "OK"}


# A whole message, attachments included, counted after their base64:
# https://postmarkapp.com/support/article/1056-what-are-the-attachment-and-email-size-limits
POSTMARK_MESSAGE_MAX_BYTES = 10 * 1000 * 1000
POSTMARK_TOO_LARGE = "Message size exceeds the 10 MB limit, attachments included."


def _postmark_attachment_problem(mail: dict[str, Any]) -> str | None:
    """Postmark's attachment checks: each `{Name, Content, ContentType, ContentID?}`, the content base64, the type a
    MIME type, the ContentID ASCII without spaces (https://postmarkapp.com/developer/user-guide/send-email-with-api/
    send-a-single-email, and its 2023 notice on attachment validation), and the message's size."""
    attachments = mail.get("Attachments") or []
    for attachment in attachments:
        if not all(isinstance(attachment.get(key), str) and attachment[key] for key in ("Name", "Content")):
            return "Attachments must each have a Name and Content."
        if not _is_base64(attachment["Content"]):
            return f"Attachment '{attachment['Name']}' content is not valid base64."
        if not re.fullmatch(r"[\w.+-]+/[\w.+-]+(;.*)?", attachment.get("ContentType") or ""):
            return f"Invalid content type for attachment '{attachment['Name']}'."
        content_id = attachment.get("ContentID") or ""
        if not content_id.isascii() or " " in content_id:
            return f"Invalid content ID for attachment '{attachment['Name']}'."
    size = sum(len(str(mail.get(body) or "")) for body in ("HtmlBody", "TextBody"))
    if size + sum(len(attachment["Content"]) for attachment in attachments) > POSTMARK_MESSAGE_MAX_BYTES:
        return POSTMARK_TOO_LARGE
    return None


def _is_base64(content: Any) -> bool:
    try:
        base64.b64decode(content, validate=True)
    except (binascii.Error, TypeError, ValueError):
        return False
    return True


def _postmark_metadata_ok(metadata: Any) -> bool:
    """Postmark's custom metadata: up to 10 fields, names up to 20 characters and no two alike but for case, values
    up to 80 (https://postmarkapp.com/support/article/1125-custom-metadata-faq)."""
    if not isinstance(metadata, dict) or len(metadata) > 10:
        return False
    if len({str(name).lower() for name in metadata}) < len(metadata):
        return False
    return all(len(str(name)) <= 20 and len(str(value)) <= 80 for name, value in metadata.items())


def _postmark_count(addresses: Any) -> int:
    """To, Cc and Bcc are each one comma-separated string of at most 50 addresses
    (https://postmarkapp.com/developer/api/email-api)."""
    return len([part for part in addresses.split(",") if part.strip()]) if isinstance(addresses, str) else 0


def _postmark_headers_ok(headers: Any) -> bool:
    """Headers is a list of {"Name", "Value"} objects, both strings."""
    if headers is None:
        return True
    return isinstance(headers, list) and all(
        isinstance(header, dict) and isinstance(header.get("Name"), str) and isinstance(header.get("Value"), str)
        for header in headers
    )


# ======================================================================================
# Plumbing
# ======================================================================================
class _Server(CountingServer):
    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's
    # delayed ACK (40 ms on Linux), as no production web server would make it wait.
    disable_nagle_algorithm = True

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        provider = self.server.provider
        try:
            reply = provider.respond(self.command, self.path, self.headers.items(), body)
        except Exception:  # a bug in the fake: show it, and answer like the provider's 500
            traceback.print_exc()
            reply = provider._error(500)
        payload = b"" if reply.body is None else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if payload:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _public_key() -> str:
    """Something shaped like the base64 RSA public key a DKIM record carries."""
    return "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQ" + secrets.token_urlsafe(96).replace("-", "+").replace("_", "/")
