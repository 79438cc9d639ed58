"""The email provider interface: send through django-anymail, sender domains over HTTP.

A provider module declares its anymail backend, how it authenticates, and how it turns its
domain API's answers into :class:`DomainState`. Every failure leaves as one
:class:`ProviderError` that names the provider and says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email import encoders
from email.mime.base import MIMEBase
from typing import Any, ClassVar

import requests
from anymail.exceptions import AnymailError, AnymailRecipientsRefused, AnymailRequestsAPIError
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection

from providers.http import describe_network_error, provider_session
from providers.text import text_part

# How the providers answer a create for a domain they already hold.
ALREADY_EXISTS_STATUSES = {400, 403, 409, 422}
# How the providers answer a credential they do not accept: SendGrid 401, Resend 401 (a sending-only key) or 403
# (an invalid one), Postmark 401.
REFUSED_CREDENTIAL_STATUSES = {401, 403}


class ProviderError(Exception):
    """A provider refused or could not be reached. ``transient``: trying again later may work."""

    def __init__(self, provider: str, message: str, *, transient: bool, status: int | None = None) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.message = message
        self.transient = transient
        self.status = status


class CredentialRefused(ProviderError):
    """The provider refused a credential outright; ``credential`` names the :class:`Credentials` field it refused."""

    def __init__(self, error: ProviderError, *, credential: str) -> None:
        super().__init__(error.provider, error.message, transient=False, status=error.status)
        self.credential = credential


def is_transient_status(status: int | None) -> bool:
    """No response, 429 and 5xx may pass on a later try; other 4xx will not (anymail's own classification)."""
    return status is None or status == 429 or status >= 500


@dataclass(frozen=True)
class Credentials:
    api_key: str
    # Postmark only: its account token, needed for domain operations, not for sending.
    account_token: str | None = None


@dataclass(frozen=True)
class KeyCheck:
    """A cheap authenticated GET that succeeds only when the provider accepts the credential it carries."""

    credential: str  # the Credentials field it proves: "api_key" or "account_token"
    path: str
    headers: dict[str, str]


@dataclass(frozen=True)
class EmailAttachment:
    """A file the message carries; with ``content_id``, inline: the HTML body shows it as ``cid:<content_id>``."""

    filename: str
    content: bytes
    content_type: str
    content_id: str | None = None


@dataclass(frozen=True)
class OutgoingEmail:
    """One message to send. The fields after ``html`` are a job's rich email (docs/rules.md, "Rich email through the
    providers"): each is empty unless the client gave it, as for NotifyHub's own mail."""

    # None for NotifyHub's own mail (sign-up confirmations), which belongs to no job.
    job_id: str | None
    sender: str  # an address, or "Display Name <address>"
    to: str
    subject: str
    html: str
    # The plain-text part; None: made from ``html``.
    text: str | None = None
    cc: Sequence[str] = ()
    bcc: Sequence[str] = ()
    reply_to: Sequence[str] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    tags: Sequence[str] = ()
    # The client's own; NotifyHub's ``job_id`` is added at the send (:func:`message_metadata`).
    metadata: Mapping[str, str] = field(default_factory=dict)
    attachments: tuple[EmailAttachment, ...] = ()


@dataclass(frozen=True)
class SendResult:
    provider: str
    message_id: str | None


@dataclass(frozen=True)
class DnsRecord:
    type: str  # CNAME, TXT or MX
    host: str
    value: str
    priority: int | None = None

    def as_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": self.type, "host": self.host, "value": self.value}
        return record if self.priority is None else {**record, "priority": self.priority}


@dataclass(frozen=True)
class DomainState:
    provider_domain_id: str
    records: list[DnsRecord]
    verified: bool


@dataclass(frozen=True)
class Verification:
    verified: bool
    # Why the provider does not consider the domain verified yet, when it says.
    reasons: list[str] = field(default_factory=list)


def build_message(email: OutgoingEmail, *, connection: Any = None) -> EmailMultiAlternatives:
    """HTML body with a plain-text part (the client's, else derived from the HTML), so both kinds of mail client
    read it, and the addresses and headers anymail and Django's backends carry as they are: ``cc``, ``bcc``,
    ``reply_to``, ``extra_headers``."""
    message = EmailMultiAlternatives(
        email.subject,
        text_part(email.html) if email.text is None else email.text,
        email.sender,
        [email.to],
        bcc=list(email.bcc),
        connection=connection,
        cc=list(email.cc),
        reply_to=list(email.reply_to),
        headers=dict(email.headers),
    )
    message.attach_alternative(email.html, "text/html")
    for attachment in email.attachments:
        if attachment.content_id is None:
            message.attach(attachment.filename, attachment.content, attachment.content_type)
        else:
            message.attach(inline_part(attachment))
    return message


# NotifyHub's own metadata key: the job's id, which the providers' events are matched to their job by
# (webhooks_inbound/events.py). A client may not set it (docs/rules.md, "Rich email").
JOB_ID_METADATA_KEY = "job_id"


def metadata_within(metadata: dict[str, str], admits: Callable[[dict[str, str], str, str], bool]) -> dict[str, str]:
    """``job_id``, then the client's entries in their order that ``admits(kept, name, value)`` lets in beside those
    kept so far: what a provider with a narrower limit than the API's carries."""
    key = JOB_ID_METADATA_KEY
    kept = {key: metadata[key]} if key in metadata else {}
    for name, value in metadata.items():
        if name not in kept and admits(kept, name, value):
            kept[name] = value
    return kept


def message_metadata(email: OutgoingEmail) -> dict[str, str]:
    """The client's metadata and NotifyHub's ``job_id``, which provider events are matched by, so it always wins
    (the API refuses a client key ``job_id``)."""
    if email.job_id is None:
        return dict(email.metadata)
    return {**email.metadata, JOB_ID_METADATA_KEY: email.job_id}


def inline_part(attachment: EmailAttachment) -> MIMEBase:
    """An inline attachment: a MIME part with its Content-ID, how anymail reads an inline file for every provider
    (https://anymail.dev/en/stable/sending/anymail_additions/#inline-images).

    Its type is the file's own, as Django's ``attach`` gives a file that is not inline: a text type's file goes as
    application/octet-stream unless it is UTF-8, the one charset Django and anymail hand a text file on in.
    """
    maintype, subtype = attachment.content_type.split("/", 1)
    if maintype.lower() == "text" and not _is_utf8(attachment.content):
        maintype, subtype = "application", "octet-stream"
    part = MIMEBase(maintype, subtype)
    part.set_payload(attachment.content)
    encoders.encode_base64(part)
    part.add_header("Content-Disposition", "inline", filename=attachment.filename)
    part.add_header("Content-ID", f"<{attachment.content_id}>")
    return part


def _is_utf8(content: bytes) -> bool:
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class EmailProvider:
    name: ClassVar[str]
    anymail_backend: ClassVar[str]
    # The keyword anymail takes the sending credential under.
    credential_kwarg: ClassVar[str] = "api_key"
    api_url_setting: ClassVar[str]

    @property
    def api_url(self) -> str:
        url: str = getattr(settings, self.api_url_setting)
        return url if url.endswith("/") else url + "/"

    # --- sending ----------------------------------------------------------------------
    def send(self, email: OutgoingEmail, credentials: Credentials) -> SendResult:
        message = build_message(self.carried(email), connection=self._connection(credentials))
        message.extra_headers = self.headers_carried(message.extra_headers)
        # anymail's own attributes: each backend maps them to its provider's fields (docs/rules.md, "Rich email
        # through the providers").
        tags = self.tags_carried(email.tags)
        if tags:
            message.tags = tags  # type: ignore[attr-defined]
        # The job id travels with the message so the provider's events can be matched to it.
        metadata = self.metadata_carried(message_metadata(email))
        if metadata:
            message.metadata = metadata  # type: ignore[attr-defined]
        try:
            message.send()
        except AnymailError as error:
            raise self._send_error(error) from None
        return SendResult(provider=self.name, message_id=self.message_id(message))

    def headers_carried(self, headers: dict[str, str]) -> dict[str, str]:
        """The client's headers this provider sends as they are (the others are left out, never refused)."""
        return headers

    def tags_carried(self, tags: Sequence[str]) -> list[str]:
        """The tags this provider can carry; a provider with a narrower limit keeps what fits rather than refuse
        the message (docs/rules.md, "Rich email through the providers")."""
        return list(tags)

    def metadata_carried(self, metadata: dict[str, str]) -> dict[str, str]:
        """The metadata this provider can carry, ``job_id`` always among it; as :meth:`tags_carried`."""
        return metadata

    def carried(self, email: OutgoingEmail) -> OutgoingEmail:
        """``email`` as this provider can carry it (docs/rules.md says what each provider changes): as it is."""
        return email

    def _connection(self, credentials: Credentials) -> Any:
        """anymail's backend for one send, on this thread's kept :func:`provider_session`.

        A backend whose ``session`` is set counts as open: anymail then neither makes a session of its own nor closes
        this one after the send, as Django's backends leave a connection their caller opened
        (https://docs.djangoproject.com/en/5.2/topics/email/#sending-multiple-emails). The credential travels in
        each request's headers, so one session serves every account.
        """
        options: dict[str, Any] = {
            "api_url": self.api_url,
            "timeout": settings.PROVIDER_TIMEOUT_SECONDS,
            self.credential_kwarg: credentials.api_key,
        }
        connection = get_connection(self.anymail_backend, **options)
        connection.session = provider_session()
        return connection

    def message_id(self, message: EmailMultiAlternatives) -> str | None:
        """The id the provider's events will name the message by."""
        return message.anymail_status.message_id  # type: ignore[attr-defined]

    def _send_error(self, error: AnymailError) -> ProviderError:
        if isinstance(error, AnymailRequestsAPIError) and isinstance(error, requests.RequestException):
            if error.status_code is None:
                return self.network_error(error)
            return self.http_error(error.status_code, error.response)
        if isinstance(error, AnymailRecipientsRefused):
            return ProviderError(self.name, "the recipient was refused", transient=False)
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        return ProviderError(self.name, first_line, transient=False)

    # --- errors -----------------------------------------------------------------------
    def http_error(self, status: int, response: requests.Response | None) -> ProviderError:
        try:
            body = response.json() if response is not None else None
        except ValueError:
            body = None
        detail = self.error_detail(body) if body is not None else None
        reason = detail or (response.reason if response is not None else "") or "error"
        return ProviderError(self.name, f"{status} {reason}", transient=is_transient_status(status), status=status)

    def network_error(self, error: requests.RequestException) -> ProviderError:
        message = describe_network_error(error, timeout_seconds=settings.PROVIDER_TIMEOUT_SECONDS)
        return ProviderError(self.name, message, transient=True)

    def error_detail(self, body: Any) -> str | None:
        """The human message inside the provider's error body."""
        raise NotImplementedError

    # --- credentials --------------------------------------------------------------------
    # The path of a cheap GET that needs the API key and changes nothing; each provider names one.
    key_check_path: ClassVar[str]

    def key_checks(self, credentials: Credentials) -> list[KeyCheck]:
        return [KeyCheck("api_key", self.key_check_path, self.auth_headers(credentials))]

    def check_key(self, credentials: Credentials) -> None:
        """Proves the provider accepts ``credentials``, so a mistyped or revoked key is refused before it is saved.

        Raises :class:`CredentialRefused` for a credential the provider refuses, and ProviderError when it could
        not tell (unreachable, rate limited, failing).
        """
        for check in self.key_checks(credentials):
            try:
                self.call("GET", check.path, credentials, auth=check.headers)
            except ProviderError as error:
                if error.status in REFUSED_CREDENTIAL_STATUSES:
                    raise CredentialRefused(error, credential=check.credential) from None
                raise

    # --- domain API -------------------------------------------------------------------
    def auth_headers(self, credentials: Credentials) -> dict[str, str]:
        return {"Authorization": f"Bearer {credentials.api_key}"}

    def missing_domain_credentials(self, credentials: Credentials) -> str | None:
        """Why this provider cannot manage domains with these credentials, or None when it can."""
        return None

    def call(
        self, method: str, path: str, credentials: Credentials, *, json: Any = None, auth: dict[str, str] | None = None
    ) -> Any:
        """One request to the provider's API; returns the parsed body, raises ProviderError.

        ``auth``: the headers that authenticate it, when not the domain API's (:meth:`auth_headers`).
        """
        try:
            response = provider_session().request(
                method,
                self.api_url + path,
                json=json,
                headers={"Accept": "application/json", **(auth or self.auth_headers(credentials))},
                timeout=settings.PROVIDER_TIMEOUT_SECONDS,
            )
        except requests.RequestException as error:
            raise self.network_error(error) from None
        if not 200 <= response.status_code < 300:
            raise self.http_error(response.status_code, response)
        return response.json() if response.content else None

    def domain_create(self, name: str, credentials: Credentials) -> DomainState:
        """Registers ``name``; a domain the provider already has is fetched instead."""
        try:
            body = self.call("POST", self.domains_path, credentials, json=self.create_body(name))
        except ProviderError as error:
            if error.status not in ALREADY_EXISTS_STATUSES:
                raise
            body = self.find_domain(name, credentials)
            if body is None:
                raise
        return self.domain_state(body, name)

    def domain_delete(self, domain_id: str, credentials: Credentials) -> None:
        try:
            self.call("DELETE", f"{self.domains_path}/{domain_id}", credentials)
        except ProviderError as error:
            if error.status != 404:  # already gone is what we wanted
                raise

    # Each provider fills these in.
    domains_path: ClassVar[str]

    def create_body(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def find_domain(self, name: str, credentials: Credentials) -> dict[str, Any] | None:
        raise NotImplementedError

    def domain_state(self, body: dict[str, Any], name: str) -> DomainState:
        raise NotImplementedError

    def domain_verify(self, domain_id: str, credentials: Credentials) -> Verification:
        raise NotImplementedError


def top_level_message(body: Any, key: str) -> str | None:
    """``body[key]`` as text, for providers that put an error's message at the top of its body (Postmark, Resend)."""
    return str(body[key]) if isinstance(body, dict) and body.get(key) else None
