"""Every operation of the API that takes an API key, grouped as the client offers them (``nh.jobs.get``), each
defined once for both clients (``_surface.py``): its route, its arguments, its request and its result.

The rules behind the arguments are NotifyHub's docs/rules.md ("Order of checks on a send", "Batches",
"Idempotency", "Scheduled sends") and docs/event-endpoints.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from ._attachments import Attachment
from ._calls import Call, Paging, Route, reading
from ._decode import api_name, decode
from ._flows import Flow, poll_until_final
from ._models import (
    AcceptedJob,
    AcceptedMessage,
    App,
    AppDeleted,
    AppEndpoint,
    AppEndpointDeleted,
    AppMessage,
    AppMessageDetail,
    AuditEntry,
    BatchResult,
    DashboardStats,
    Domain,
    DomainDeleted,
    EndpointRecovered,
    EndpointSecret,
    EventDelivery,
    EventEndpoint,
    EventEndpointDeleted,
    EventType,
    Job,
    JobChange,
    JobStatus,
    JobSummary,
    JobType,
    PortalLink,
    PortalRevoked,
    Priority,
    Provider,
    RefusedItem,
    RenderedTemplate,
    Suppression,
    SuppressionReason,
    SuppressionRemoved,
    Template,
    TemplateDeleted,
    TemplateSummary,
    TemplateVersion,
    Usage,
    WebhookMethod,
)
from ._retry import RetryPolicy
from ._surface import Resource, TransportT, listing, operation, procedure


class WebhookMessage(TypedDict):
    """One webhook of ``webhooks.send_batch``: the arguments of ``webhooks.send``."""

    url: str
    payload: Mapping[str, Any]
    method: NotRequired[WebhookMethod | None]
    headers: NotRequired[Mapping[str, str] | None]
    priority: NotRequired[Priority | None]
    idempotency_key: NotRequired[str | None]
    send_at: NotRequired[datetime | str | None]


class EmailMessage(TypedDict):
    """One email of ``emails.send_batch``: the arguments of ``emails.send``; ``subject`` and ``body``, or
    ``template`` and ``data``."""

    to: str
    subject: NotRequired[str | None]
    body: NotRequired[str | None]
    template: NotRequired[str | None]
    data: NotRequired[Mapping[str, Any] | None]
    template_version: NotRequired[int | None]
    from_: NotRequired[str | None]
    priority: NotRequired[Priority | None]
    idempotency_key: NotRequired[str | None]
    provider: NotRequired[Provider | None]
    fallback: NotRequired[Provider | None]
    send_at: NotRequired[datetime | str | None]
    cc: NotRequired[Sequence[str] | None]
    bcc: NotRequired[Sequence[str] | None]
    reply_to: NotRequired[str | Sequence[str] | None]
    text: NotRequired[str | None]
    headers: NotRequired[Mapping[str, str] | None]
    tags: NotRequired[Sequence[str] | None]
    metadata: NotRequired[Mapping[str, str] | None]
    attachments: NotRequired[Sequence[Attachment] | None]
    topic: NotRequired[str | None]


def send_body(message: WebhookMessage | EmailMessage) -> dict[str, Any]:
    """A send's body in the API's names, its idempotency key the caller's or a new one: with it, sending the body
    again after a lost answer is refused (409) rather than stored twice (``_retry.py``)."""
    fields: Mapping[str, Any] = message
    body = {_body_name(name): _body_value(value) for name, value in fields.items() if value is not None}
    return _with_idempotency_key(body)


def _with_idempotency_key(body: dict[str, Any]) -> dict[str, Any]:
    body.setdefault("idempotencyKey", str(uuid.uuid4()))
    return body


def _body_name(name: str) -> str:
    return "from" if name == "from_" else api_name(name)


def _body_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [item.as_body() if isinstance(item, Attachment) else item for item in value]
    return value


def _read_batch(data: Any) -> BatchResult:
    return BatchResult(
        items=tuple(
            decode(AcceptedJob, item) if "jobId" in item else decode(RefusedItem, item) for item in data["items"]
        )
    )


class Webhooks(Resource[TransportT]):
    @operation("POST", "/api/v1/notifications/webhook")
    def send(
        route: Route,
        *,
        url: str,
        payload: Mapping[str, Any],
        method: WebhookMethod | None = None,
        headers: Mapping[str, str] | None = None,
        priority: Priority | None = None,
        idempotency_key: str | None = None,
        send_at: datetime | str | None = None,
    ) -> Call[AcceptedJob]:
        """Queues ``payload`` (a JSON object, at most 10 KB) for ``url`` (HTTPS), sent with ``method`` (POST) and
        ``headers``; ``send_at`` (with its time zone) delays it up to 30 days. Returns the accepted job."""
        message: WebhookMessage = {
            "url": url,
            "payload": payload,
            "method": method,
            "headers": headers,
            "priority": priority,
            "idempotency_key": idempotency_key,
            "send_at": send_at,
        }
        return route.call(reading(AcceptedJob), body=send_body(message))

    @operation("POST", "/api/v1/notifications/webhook/batch")
    def send_batch(route: Route, messages: Sequence[WebhookMessage]) -> Call[BatchResult]:
        """Queues 1 to 100 webhooks in one request; each item is accepted or refused in its own slot."""
        return route.call(_read_batch, body={"items": [send_body(message) for message in messages]})


class Emails(Resource[TransportT]):
    @operation("POST", "/api/v1/notifications/email")
    def send(
        route: Route,
        *,
        to: str,
        subject: str | None = None,
        body: str | None = None,
        from_: str | None = None,
        priority: Priority | None = None,
        idempotency_key: str | None = None,
        provider: Provider | None = None,
        fallback: Provider | None = None,
        send_at: datetime | str | None = None,
        cc: Sequence[str] | None = None,
        bcc: Sequence[str] | None = None,
        reply_to: str | Sequence[str] | None = None,
        text: str | None = None,
        headers: Mapping[str, str] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, str] | None = None,
        attachments: Sequence[Attachment] | None = None,
        template: str | None = None,
        data: Mapping[str, Any] | None = None,
        template_version: int | None = None,
        topic: str | None = None,
    ) -> Call[AcceptedJob]:
        """Queues an email; ``body`` is HTML, ``text`` its plain-text part (made from ``body`` when left out). In
        place of ``subject`` and ``body``, ``template`` (an id or alias) rendered with ``data`` (at most 64 KB) when
        accepted, at its current version or ``template_version`` (docs/templates.md).
        ``provider`` and ``fallback`` force its route (paid plans). ``cc``, ``bcc`` (with ``to``, at most 50
        recipients), ``reply_to`` (one address or up to 5), ``headers``, ``tags`` (they filter ``jobs.list``),
        ``metadata`` (it rides on the job's events) and ``attachments`` (``Attachment.from_path``, at most 10 MB in
        all) as NotifyHub's docs/rules.md, "Rich email", says. ``topic`` (1 to 64 of ``a-z0-9_-``) gives the email a
        one-click unsubscribe from that topic alone (docs/suppressions.md, "Topics"). Returns the accepted job."""
        message: EmailMessage = {
            "to": to,
            "subject": subject,
            "body": body,
            "from_": from_,
            "priority": priority,
            "idempotency_key": idempotency_key,
            "provider": provider,
            "fallback": fallback,
            "send_at": send_at,
            "cc": cc,
            "bcc": bcc,
            "reply_to": reply_to,
            "text": text,
            "headers": headers,
            "tags": tags,
            "metadata": metadata,
            "attachments": attachments,
            "template": template,
            "data": data,
            "template_version": template_version,
            "topic": topic,
        }
        return route.call(reading(AcceptedJob), body=send_body(message))

    @operation("POST", "/api/v1/notifications/email/batch")
    def send_batch(route: Route, messages: Sequence[EmailMessage]) -> Call[BatchResult]:
        """Queues 1 to 100 emails in one request; each item is accepted or refused in its own slot."""
        return route.call(_read_batch, body={"items": [send_body(message) for message in messages]})


class Jobs(Resource[TransportT]):
    @operation("GET", "/api/v1/notifications/jobs/{job_id}")
    def get(route: Route, job_id: str) -> Call[Job]:
        """The job, with its delivery logs and the providers' events."""
        return route.call(reading(Job), path={"job_id": job_id})

    @listing("GET", "/api/v1/notifications/jobs")
    def list(
        route: Route,
        *,
        type: JobType | None = None,
        status: JobStatus | None = None,
        to: str | None = None,
        host: str | None = None,
        tag: str | None = None,
        page_size: int | None = None,
    ) -> Paging[JobSummary]:
        """Every job of the key's mode, newest first, fetched ``page_size`` (at most 100) a page: ``to`` the emails
        to an address, ``host`` the webhooks to a host, ``tag`` the emails sent with that tag."""
        query = {"type": type, "status": status, "to": to, "host": host, "tag": tag, "limit": page_size}
        return route.paging(JobSummary, query=query)

    @operation("POST", "/api/v1/notifications/jobs/{job_id}/retry")
    def retry(route: Route, job_id: str) -> Call[JobChange]:
        """Queues a failed job again."""
        return route.call(reading(JobChange), path={"job_id": job_id})

    @operation("POST", "/api/v1/notifications/jobs/{job_id}/cancel")
    def cancel(route: Route, job_id: str) -> Call[JobChange]:
        """Stops a pending job: it fails with ``Cancelled``."""
        return route.call(reading(JobChange), path={"job_id": job_id})

    @procedure
    def wait(policy: RetryPolicy, job_id: str, *, timeout: float = 60.0) -> Flow[Job]:
        """The job once it is completed or failed, read again and again meanwhile; ``WaitTimeoutError`` after
        ``timeout`` seconds."""
        return poll_until_final(Jobs.get.call(job_id), policy, timeout)


class Suppressions(Resource[TransportT]):
    @listing("GET", "/api/v1/suppressions")
    def list(
        route: Route,
        *,
        email: str | None = None,
        reason: SuppressionReason | None = None,
        topic: str | None = None,
        page_size: int | None = None,
    ) -> Paging[Suppression]:
        """The addresses the account's email never goes to, newest first; ``topic`` the entries for that topic."""
        query = {"email": email, "reason": reason, "topic": topic, "limit": page_size}
        return route.paging(Suppression, query=query)

    @operation("POST", "/api/v1/suppressions")
    def add(route: Route, email: str, *, topic: str | None = None) -> Call[Suppression]:
        """Suppresses an address by hand, for every email or, with ``topic``, for that topic's emails."""
        body = {"email": email} if topic is None else {"email": email, "topic": topic}
        return route.call(reading(Suppression), body=body)

    @operation("DELETE", "/api/v1/suppressions/{email}")
    def remove(route: Route, email: str, *, topic: str | None = None) -> Call[SuppressionRemoved]:
        """Lets the address receive email again: its entry for every email or, with ``topic``, for that topic."""
        return route.call(reading(SuppressionRemoved), path={"email": email}, query={"topic": topic})


class Templates(Resource[TransportT]):
    @listing("GET", "/api/v1/templates")
    def list(route: Route, *, page_size: int | None = None) -> Paging[TemplateSummary]:
        """The account's templates by alias, without their parts."""
        return route.paging(TemplateSummary, query={"limit": page_size})

    @operation("POST", "/api/v1/templates")
    def create(
        route: Route, *, alias: str, name: str, subject: str, html: str, text: str | None = None
    ) -> Call[Template]:
        """Saves a template (Liquid) as its version 1; the answer lists the ``variables`` it reads."""
        body = {"alias": alias, "name": name, "subject": subject, "html": html, "text": text}
        return route.call(reading(Template), body={key: value for key, value in body.items() if value is not None})

    @operation("GET", "/api/v1/templates/{template}")
    def get(route: Route, template: str, *, version: int | None = None) -> Call[Template]:
        """The template (id or alias) at its current version, or at ``version``."""
        return route.call(reading(Template), path={"template": template}, query={"version": version})

    @operation("PUT", "/api/v1/templates/{template}")
    def update(
        route: Route, template: str, *, subject: str, html: str, text: str | None = None, name: str | None = None
    ) -> Call[Template]:
        """Saves the parts as the template's next version, now its current one; ``name`` renames it."""
        body = {"subject": subject, "html": html, "text": text, "name": name}
        return route.call(
            reading(Template),
            path={"template": template},
            body={key: value for key, value in body.items() if value is not None},
        )

    @operation("DELETE", "/api/v1/templates/{template}")
    def delete(route: Route, template: str) -> Call[TemplateDeleted]:
        """Deletes the template and its versions; its alias is free again."""
        return route.call(reading(TemplateDeleted), path={"template": template})

    @listing("GET", "/api/v1/templates/{template}/versions")
    def versions(route: Route, template: str, *, page_size: int | None = None) -> Paging[TemplateVersion]:
        """The template's versions, newest first."""
        return route.paging(TemplateVersion, path={"template": template}, query={"limit": page_size})

    @operation("POST", "/api/v1/templates/{template}/render")
    def render(route: Route, template: str, *, data: Mapping[str, Any]) -> Call[RenderedTemplate]:
        """The current version rendered with ``data`` as a send would send it; nothing is sent, no quota used."""
        return route.call(reading(RenderedTemplate), path={"template": template}, body={"data": data})


def _read_endpoints(data: Any) -> tuple[EventEndpoint, ...]:
    return tuple(decode(EventEndpoint, endpoint) for endpoint in data["data"])


class EventEndpoints(Resource[TransportT]):
    @operation("GET", "/api/v1/event-endpoints")
    def list(route: Route) -> Call[tuple[EventEndpoint, ...]]:
        """The account's event endpoints (at most 5), oldest first."""
        return route.call(_read_endpoints)

    @operation("POST", "/api/v1/event-endpoints")
    def create(route: Route, *, url: str, events: Sequence[EventType]) -> Call[EventEndpoint]:
        """Adds an HTTPS URL that the ``events`` are pushed to, signed as webhooks are."""
        return route.call(reading(EventEndpoint), body={"url": url, "events": [*events]})

    @operation("DELETE", "/api/v1/event-endpoints/{endpoint_id}")
    def delete(route: Route, endpoint_id: str) -> Call[EventEndpointDeleted]:
        """Deletes the endpoint and its deliveries."""
        return route.call(reading(EventEndpointDeleted), path={"endpoint_id": endpoint_id})

    @listing("GET", "/api/v1/event-endpoints/{endpoint_id}/deliveries")
    def deliveries(route: Route, endpoint_id: str, *, page_size: int | None = None) -> Paging[EventDelivery]:
        """The events sent to the endpoint, newest first, with their status and last error."""
        return route.paging(EventDelivery, path={"endpoint_id": endpoint_id}, query={"limit": page_size})


class _Omitted:
    """An argument left out: not sent, so a create takes the API's default and an update leaves the field as it is.
    (None is sent, as null: it clears a field that may be null, a rate limit or a description.)"""

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Any = _Omitted()


def _given(**fields: Any) -> dict[str, Any]:
    """The fields given, in the API's names."""
    return {api_name(name): value for name, value in fields.items() if value is not OMITTED}


def _read_app_endpoints(data: Any) -> tuple[AppEndpoint, ...]:
    return tuple(decode(AppEndpoint, endpoint) for endpoint in data["data"])


class Apps(Resource[TransportT]):
    @listing("GET", "/api/v1/apps")
    def list(route: Route, *, page_size: int | None = None) -> Paging[App]:
        """The account's apps, newest first."""
        return route.paging(App, query={"limit": page_size})

    @operation("POST", "/api/v1/apps")
    def create(route: Route, *, name: str, uid: str | None = None) -> Call[App]:
        """An app for one of your customers; ``uid``, your own id for it, names it wherever its id does."""
        return route.call(reading(App), body={"name": name, **({"uid": uid} if uid is not None else {})})

    @operation("GET", "/api/v1/apps/{app}")
    def get(route: Route, app: str) -> Call[App]:
        """The app by its id or uid."""
        return route.call(reading(App), path={"app": app})

    @operation("PATCH", "/api/v1/apps/{app}")
    def update(route: Route, app: str, *, name: str = OMITTED, uid: str = OMITTED) -> Call[App]:
        """Renames the app or gives it another uid."""
        return route.call(reading(App), path={"app": app}, body=_given(name=name, uid=uid))

    @operation("DELETE", "/api/v1/apps/{app}")
    def delete(route: Route, app: str) -> Call[AppDeleted]:
        """Deletes the app with its endpoints, its messages and their deliveries."""
        return route.call(reading(AppDeleted), path={"app": app})

    @operation("GET", "/api/v1/apps/{app}/endpoints")
    def endpoints(route: Route, app: str) -> Call[tuple[AppEndpoint, ...]]:
        """The app's endpoints (at most 20), oldest first."""
        return route.call(_read_app_endpoints, path={"app": app})

    @operation("POST", "/api/v1/apps/{app}/endpoints")
    def create_endpoint(
        route: Route,
        app: str,
        *,
        url: str,
        event_types: Sequence[str] = OMITTED,
        description: str | None = OMITTED,
        rate_limit: int | None = OMITTED,
    ) -> Call[AppEndpoint]:
        """Adds an HTTPS URL receiving the app's messages of ``event_types`` (all of them when left out), signed with
        a secret of its own, at most ``rate_limit`` deliveries a second."""
        body = _given(url=url, event_types=event_types, description=description, rate_limit=rate_limit)
        return route.call(reading(AppEndpoint), path={"app": app}, body=body)

    @operation("GET", "/api/v1/apps/{app}/endpoints/{endpoint_id}")
    def get_endpoint(route: Route, app: str, endpoint_id: str) -> Call[AppEndpoint]:
        """One endpoint of the app."""
        return route.call(reading(AppEndpoint), path={"app": app, "endpoint_id": endpoint_id})

    @operation("PATCH", "/api/v1/apps/{app}/endpoints/{endpoint_id}")
    def update_endpoint(
        route: Route,
        app: str,
        endpoint_id: str,
        *,
        url: str = OMITTED,
        event_types: Sequence[str] = OMITTED,
        description: str | None = OMITTED,
        rate_limit: int | None = OMITTED,
        disabled: bool = OMITTED,
    ) -> Call[AppEndpoint]:
        """Changes what is given; ``disabled=False`` also starts an endpoint NotifyHub disabled afresh."""
        body = _given(
            url=url, event_types=event_types, description=description, rate_limit=rate_limit, disabled=disabled
        )
        return route.call(reading(AppEndpoint), path={"app": app, "endpoint_id": endpoint_id}, body=body)

    @operation("DELETE", "/api/v1/apps/{app}/endpoints/{endpoint_id}")
    def delete_endpoint(route: Route, app: str, endpoint_id: str) -> Call[AppEndpointDeleted]:
        """Deletes the endpoint with its deliveries."""
        return route.call(reading(AppEndpointDeleted), path={"app": app, "endpoint_id": endpoint_id})

    @operation("GET", "/api/v1/apps/{app}/endpoints/{endpoint_id}/secret")
    def endpoint_secret(route: Route, app: str, endpoint_id: str) -> Call[EndpointSecret]:
        """The secret that signs the endpoint's deliveries, for its owner to verify them with."""
        return route.call(reading(EndpointSecret), path={"app": app, "endpoint_id": endpoint_id})

    @operation("POST", "/api/v1/apps/{app}/endpoints/{endpoint_id}/secret/rotate")
    def rotate_endpoint_secret(route: Route, app: str, endpoint_id: str) -> Call[EndpointSecret]:
        """A new secret for the endpoint; the old one keeps signing beside it for a while (a day by default)."""
        return route.call(reading(EndpointSecret), path={"app": app, "endpoint_id": endpoint_id})

    @operation("POST", "/api/v1/apps/{app}/endpoints/{endpoint_id}/recover")
    def recover_endpoint(route: Route, app: str, endpoint_id: str, *, since: datetime | str) -> Call[EndpointRecovered]:
        """Queues again the endpoint's failed deliveries sent since ``since`` (with its time zone, at most 90 days
        ago), as ``jobs.retry`` does each: after re-enabling an endpoint, what it missed."""
        body = {"since": _body_value(since)}
        return route.call(reading(EndpointRecovered), path={"app": app, "endpoint_id": endpoint_id}, body=body)

    @operation("POST", "/api/v1/apps/{app}/portal")
    def portal(route: Route, app: str) -> Call[PortalLink]:
        """A link to the app's consumer portal, for its customer to manage their endpoints, read their secrets and
        see what was sent to them, valid an hour (unless the service is set otherwise)."""
        return route.call(reading(PortalLink), path={"app": app}, body={})

    @operation("POST", "/api/v1/apps/{app}/portal/revoke")
    def revoke_portal(route: Route, app: str) -> Call[PortalRevoked]:
        """Ends every consumer portal link of the app made until now, and every session opened with one, before they
        expire (a link handed to the wrong person); links made afterwards work."""
        return route.call(reading(PortalRevoked), path={"app": app}, body={})

    @operation("POST", "/api/v1/apps/{app}/messages")
    def send_message(
        route: Route, app: str, *, event_type: str, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Call[AcceptedMessage]:
        """Sends ``payload`` (a JSON object, at most 64 KB) as an ``event_type`` event to each enabled endpoint of the
        app that takes the type, each delivery a webhook job signed with its endpoint's secret. Returns the message
        with its deliveries (none when no endpoint takes the type)."""
        body = {"eventType": event_type, "payload": payload, "idempotencyKey": idempotency_key}
        return route.call(
            reading(AcceptedMessage),
            path={"app": app},
            body=_with_idempotency_key({name: value for name, value in body.items() if value is not None}),
        )

    @listing("GET", "/api/v1/apps/{app}/messages")
    def messages(
        route: Route, app: str, *, event_type: str | None = None, page_size: int | None = None
    ) -> Paging[AppMessage]:
        """The app's messages of the key's mode, newest first, without their payloads; ``event_type`` one type's."""
        return route.paging(AppMessage, path={"app": app}, query={"eventType": event_type, "limit": page_size})

    @operation("GET", "/api/v1/apps/{app}/messages/{message_id}")
    def get_message(route: Route, app: str, message_id: str) -> Call[AppMessageDetail]:
        """The message with its payload and where each of its deliveries stands."""
        return route.call(reading(AppMessageDetail), path={"app": app, "message_id": message_id})


class SenderDomain(Resource[TransportT]):
    @operation("GET", "/api/v1/user/domain")
    def get(route: Route) -> Call[Domain]:
        """The account's sender domain, with the DNS records each provider needs."""
        return route.call(reading(Domain))

    @operation("POST", "/api/v1/user/domain/request")
    def request(route: Route, domain: str) -> Call[Domain]:
        """Registers ``em.<domain>`` with every provider of the account's (paid plans)."""
        return route.call(reading(Domain), body={"domain": domain})

    @operation("POST", "/api/v1/user/domain/verify")
    def verify(route: Route) -> Call[Domain]:
        """Asks every provider; the domain is verified once all of them confirm."""
        return route.call(reading(Domain))

    @operation("DELETE", "/api/v1/user/domain")
    def delete(route: Route) -> Call[DomainDeleted]:
        """Removes the domain at every provider, then at NotifyHub."""
        return route.call(reading(DomainDeleted))


class Account(Resource[TransportT]):
    @operation("GET", "/api/v1/user/usage")
    def usage(route: Route) -> Call[Usage]:
        """This billing cycle's quota and what is used of it."""
        return route.call(reading(Usage))

    @operation("GET", "/api/v1/user/dashboard")
    def stats(route: Route, *, days: Literal[7, 30, 90] | None = None) -> Call[DashboardStats]:
        """The live jobs completed and failed on each of the last ``days`` days (30 by default)."""
        return route.call(reading(DashboardStats), query={"days": days})

    @listing("GET", "/api/v1/user/audit")
    def audit_log(route: Route, *, page_size: int | None = None) -> Paging[AuditEntry]:
        """Every change to the account's settings, newest first: who made it, from where, when."""
        return route.paging(AuditEntry, query={"limit": page_size})
