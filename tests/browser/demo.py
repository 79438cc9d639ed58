"""A paid holder whose pages all have something to show: API keys, provider keys, a verified domain, secrets, jobs,
usage, an event endpoint, a failing webhook destination, apps for its customers with their endpoints and messages,
and the audit log of the changes the holder made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any
from uuid import UUID

from django.utils import timezone

from accounts.models import Account, ApiKey, KeyScope, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import current_period
from accounts.services import account_create, api_key_create, provider_key_set, signing_secret_generate
from core.actor import HOLDER, acting_as
from customer_webhooks import services as customer_webhooks
from customer_webhooks.models import App, Endpoint, Message
from domains.models import DomainRegistration, DomainStatus, SenderDomain
from email_templates.services import template_create, template_update
from event_endpoints.models import Event, EventDelivery, EventDeliveryStatus
from event_endpoints.services import endpoint_create
from notifications.engine.app_endpoints import FAILING
from notifications.models import DailyTally, DeliveryStatus, DestinationHealth, JobStatus, JobType
from tests.factories import DeliveryLogFactory, JobFactory
from webhooks_inbound.services import postmark_password_generate

DEMO_EMAIL = "ada@example.com"
DEMO_PASSWORD = "correct-horse-battery-staple"
DEMO_DOMAIN = "example.com"
# Where the holder's changes came from, as the audit log shows them.
DEMO_IP = "203.0.113.7"
WEBHOOKS_USED = 3_214
# The host whose webhooks keep failing, for the endpoint health page.
FAILING_URL = "https://crm.example.net/hooks/notifyhub"
# The failed email job whose page pages.py shows: a fixed id, so the page's path is known before the data.
DEMO_JOB_ID = UUID("7d3c1b8e-2f4a-4c6d-9e0b-5a1f3c7e9d24")
DEMO_TEMPLATE_ALIAS = "password-reset"
# Sample data for the demo's password-reset template, as a holder would type it on the preview page.
DEMO_TEMPLATE_DATA = '{"name": "Ada", "link": "https://acme.example.com/reset/9f2c4e"}'
# The app (one of the holder's customers) and the message whose pages pages.py shows: fixed ids, as the job's.
# The holder's product as its customers know it, on the consumer portal's pages.
DEMO_PRODUCT_NAME = "Umbrella Payments"
DEMO_APP_ID = UUID("3f6b2a1c-8d4e-4f70-a1b2-c3d4e5f60718")
DEMO_MESSAGE_ID = UUID("9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d")

# Delivery attempts (DeliveryLog fields) the demo's jobs made.
WEBHOOK_200 = {"status": DeliveryStatus.SUCCESS, "response_status": 200, "duration_ms": 87, "error_message": None}
WEBHOOK_502 = {"response_status": 502, "duration_ms": 2013, "error_message": "502 Bad Gateway"}
WEBHOOK_503 = {"response_status": 503, "duration_ms": 41, "error_message": "503 Service Unavailable"}
SENDGRID_202 = {
    "status": DeliveryStatus.SUCCESS,
    "used_provider": "SENDGRID",
    "response_status": 202,
    "duration_ms": 184,
    "error_message": None,
}
SENDGRID_503 = {
    "used_provider": "SENDGRID",
    "response_status": 503,
    "duration_ms": 1840,
    "error_message": "SendGrid answered 503: Service Unavailable",
    "response_excerpt": '{"errors":[{"message":"The service is temporarily unavailable, please try again later."}]}',
}
POSTMARK_422 = {
    "used_provider": "POSTMARK",
    "response_status": 422,
    "duration_ms": 312,
    "error_message": "Postmark answered 422: billing@em.example.com is not a confirmed Sender Signature",
    "response_excerpt": '{"ErrorCode":400,"Message":"The \'From\' address you supplied is not a Sender Signature."}',
}

DEMO_RECORDS = {
    "SENDGRID": [
        {"type": "CNAME", "host": "em1234.em.example.com", "value": "u1234567.wl.sendgrid.net"},
        {"type": "CNAME", "host": "s1._domainkey.em.example.com", "value": "s1.domainkey.u1234567.wl.sendgrid.net"},
        {"type": "CNAME", "host": "s2._domainkey.em.example.com", "value": "s2.domainkey.u1234567.wl.sendgrid.net"},
    ],
    "POSTMARK": [
        {
            "type": "TXT",
            "host": "20261121._domainkey.em.example.com",
            "value": "k=rsa;p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC3vU7y8mQ1t6pQ0kZr2nW9fGxYbP4sLqZ1cD0aF5eH7jK",
        },
        {"type": "CNAME", "host": "pm-bounces.em.example.com", "value": "pm.mtasv.net"},
    ],
}


@dataclass(frozen=True)
class DemoHolder:
    account: Account
    email: str
    password: str

    @property
    def user(self) -> Any:
        return self.account.user


def demo_holder_create(*, email: str = DEMO_EMAIL, password: str = DEMO_PASSWORD) -> DemoHolder:
    account, _api_key = account_create(email=email, plan=Plan.STARTUP, password=password)
    Account.objects.filter(id=account.id).update(product_name=DEMO_PRODUCT_NAME)
    account.product_name = DEMO_PRODUCT_NAME
    with acting_as(HOLDER, DEMO_IP):
        _api_keys(account)
        for provider in DEMO_RECORDS:
            provider_key_set(account=account, provider=provider, api_key=f"{provider.lower()}-demo-key")
        _verified_domain(account)
        signing_secret_generate(account=account)
        postmark_password_generate(account=account)
        _jobs(account)
        _event_endpoint(account)
        _templates(account)
        _apps(account)
    _daily_tallies(account)
    UsagePeriod.objects.update_or_create(
        account=account, period_start=current_period(account)[0], defaults={"used": WEBHOOKS_USED}
    )
    return DemoHolder(account=account, email=email, password=password)


def _api_keys(account: Account) -> None:
    """Besides the first key (``Default``, used a minute ago), a send-only key used today and a read-only one never
    used, each made some days ago."""
    api_key_create(account=account, name="Billing service", scope=KeyScope.SEND)
    api_key_create(account=account, name="Reporting", scope=KeyScope.READ)
    now = timezone.now()
    for name, made, used in [
        ("Default", timedelta(days=41), timedelta(minutes=1)),
        ("Billing service", timedelta(days=12), timedelta(hours=3)),
        ("Reporting", timedelta(days=2), None),
    ]:
        ApiKey.objects.filter(account=account, name=name, revoked_at__isnull=True).update(
            created_at=now - made, last_used_at=now - used if used else None
        )


def _verified_domain(account: Account) -> None:
    domain = SenderDomain.objects.create(
        account=account, name=DEMO_DOMAIN, status=DomainStatus.VERIFIED, verified_at=timezone.now()
    )
    for number, (provider, records) in enumerate(DEMO_RECORDS.items(), start=1):
        DomainRegistration.objects.create(
            domain=domain,
            provider=provider,
            provider_domain_id=str(number),
            records=[{"provider": provider, **record} for record in records],
            verified=True,
        )


def _jobs(account: Account) -> None:
    """A list with every status, newest first: each job's attempts are its delivery logs."""
    _job(account, minutes_ago=2, type=JobType.EMAIL, payload=_email("Welcome to Acme"))
    _job(
        account,
        minutes_ago=4,
        status=JobStatus.PROCESSING,
        next_attempt_at=timezone.now() + timedelta(minutes=3),
        attempts=[WEBHOOK_502],
    )
    _job(
        account,
        minutes_ago=9,
        id=DEMO_JOB_ID,
        type=JobType.EMAIL,
        status=JobStatus.FAILED,
        payload=_email("Your invoice for March"),
        provider="SENDGRID",
        fallback="POSTMARK",
        attempts=[SENDGRID_503, SENDGRID_503, POSTMARK_422],
    )
    _job(
        account,
        minutes_ago=15,
        type=JobType.EMAIL,
        status=JobStatus.COMPLETED,
        payload=_email("Your receipt"),
        attempts=[SENDGRID_202],
    )
    for minutes_ago in (20, 35, 50):
        _job(account, minutes_ago=minutes_ago, status=JobStatus.COMPLETED, attempts=[WEBHOOK_200])
    _job(account, minutes_ago=70, status=JobStatus.FAILED, attempts=[WEBHOOK_503] * 3)
    _job(
        account,
        minutes_ago=95,
        type=JobType.EMAIL,
        status=JobStatus.COMPLETED,
        payload=_email("Reset your password"),
        attempts=[SENDGRID_202],
    )


def _templates(account: Account) -> None:
    """A password-reset template at its second version, styled as emails are, and a receipt."""
    reset = template_create(
        account=account,
        alias=DEMO_TEMPLATE_ALIAS,
        name="Password reset",
        subject="Reset your password, {{ name }}",
        html='<h1>Hello {{ name }}</h1><p>Choose a new password: <a href="{{ link }}">{{ link }}</a></p>',
    ).template
    template_update(
        template=reset,
        subject="Reset your Acme password, {{ name }}",
        html=(
            "<style>h1 { color: #1d4ed8; font-family: Georgia, serif } "
            "a { color: #ffffff; background: #1d4ed8; padding: 6px 10px; border-radius: 4px }</style>"
            "<h1>Hello {{ name }}</h1><p>Someone asked to reset the password of your Acme account. If it was you, "
            'choose a new one:</p><p><a href="{{ link }}">{{ link }}</a></p>'
            "<p>The link works for {{ hours | default: 24 }} hours.</p>"
        ),
        text="Hello {{ name }}, choose a new password: {{ link }}",
    )
    template_create(
        account=account,
        alias="order-receipt",
        name="Order receipt",
        subject="Your order {{ order.number }}",
        html=(
            "<p>Thank you for your order.</p>"
            "{% for item in order.items %}<p>{{ item.name }}: {{ item.price }}</p>{% endfor %}"
        ),
    )


def _event_endpoint(account: Account) -> None:
    """An endpoint with a few deliveries, and the failing streak of the demo's webhooks to one host."""
    endpoint = endpoint_create(
        account=account, url="https://hooks.example.com/notifyhub/events", events=["job.completed", "job.failed"]
    )
    now = timezone.now()
    for minutes_ago, status, attempts, error in [
        (3, EventDeliveryStatus.PROCESSING, 1, "503 Service Unavailable"),
        (20, EventDeliveryStatus.COMPLETED, 1, None),
        (70, EventDeliveryStatus.FAILED, 3, "410 Gone"),
    ]:
        created = now - timedelta(minutes=minutes_ago)
        event = Event.objects.create(account=account, type="job.completed", data={}, created_at=created)
        EventDelivery.objects.create(
            event=event, endpoint=endpoint, status=status, attempts=attempts, error_message=error, created_at=created
        )
    _job(
        account,
        minutes_ago=6,
        status=JobStatus.FAILED,
        payload={"url": FAILING_URL, "payload": {"n": 1}},
        attempts=[WEBHOOK_503] * 3,
    )
    DestinationHealth.objects.create(
        account=account,
        destination="crm.example.net",
        origin="https://crm.example.net",
        consecutive_failures=6,
        failing_since=now - timedelta(minutes=6),
        last_error=str(WEBHOOK_503["error_message"]),
        announced=True,
    )


def _email(subject: str) -> dict[str, str]:
    return {"to": "grace@example.com", "subject": subject, "body": f"<p>{subject}</p>"}


def _job(account: Account, *, minutes_ago: int, attempts: Sequence[dict[str, Any]] = (), **fields: Any) -> None:
    """A job created ``minutes_ago``, one attempt a minute; a finished job ends with its last attempt."""
    created = timezone.now() - timedelta(minutes=minutes_ago)
    tried = [created + timedelta(minutes=number) for number in range(1, len(attempts) + 1)]
    finished = tried[-1] if fields.get("status") in (JobStatus.COMPLETED, JobStatus.FAILED) else None
    job = JobFactory(
        account=account,
        created_at=created,
        attempts=len(attempts),
        started_at=tried[0] if tried else None,
        completed_at=finished,
        finished_at=finished,
        error_message=attempts[-1]["error_message"] if fields.get("status") == JobStatus.FAILED else None,
        **fields,
    )
    for number, (attempt, at) in enumerate(zip(attempts, tried, strict=True), start=1):
        DeliveryLogFactory(job=job, attempt=number, created_at=at, **attempt)


def _daily_tallies(account: Account) -> None:
    """30 days of figures for the home page's chart, none of them empty."""
    today = timezone.now().astimezone(UTC).date()
    for days_ago in range(30):
        DailyTally.objects.create(
            account=account,
            day=today - timedelta(days=days_ago),
            completed=40 + (days_ago * 37) % 50,
            failed=(days_ago * 5) % 7,
        )


def _apps(account: Account) -> None:
    """Three customers' apps; the first with an endpoint taking two types at 10 a second, one with a user:password
    taking every type, one NotifyHub disabled after days of failures, and three messages, the newest delivered to
    one endpoint and being retried at the other."""
    now = timezone.now()
    for days_ago, name, uid in [(30, "Initech", None), (9, "Globex Corporation", "globex")]:
        customer_webhooks.app_create(account=account, name=name, uid=uid)
        App.objects.filter(account=account, name=name).update(created_at=now - timedelta(days=days_ago))
    app = customer_webhooks.app_create(account=account, name="Acme Inc.", uid="acme-inc")
    App.objects.filter(id=app.id).update(id=DEMO_APP_ID, created_at=now - timedelta(days=2))
    app = App.objects.get(id=DEMO_APP_ID)
    billing = customer_webhooks.endpoint_create(
        app=app,
        url="https://hooks.acme.example.com/notifyhub",
        event_types=["invoice.paid", "invoice.failed"],
        description="Billing service",
        rate_limit=10,
    )
    erp = customer_webhooks.endpoint_create(app=app, url="https://ops:s3cret@erp.acme.example.com/webhooks/in")
    old = customer_webhooks.endpoint_create(app=app, url="https://old.acme.example.com/hooks", description="Legacy")
    Endpoint.objects.filter(id=old.id).update(disabled=True, disabled_reason=FAILING)
    for minutes_ago, event_type in [(95, "user.created"), (40, "invoice.failed")]:
        Message.objects.create(
            account=account, app=app, event_type=event_type, payload={}, created_at=now - timedelta(minutes=minutes_ago)
        )
    message = Message.objects.create(
        id=DEMO_MESSAGE_ID,
        account=account,
        app=app,
        event_type="invoice.paid",
        payload={"invoice": "in_1QxA", "customer": "cus_42", "amount": 4200, "currency": "eur"},
        created_at=now - timedelta(minutes=6),
    )
    delivered = {"status": JobStatus.COMPLETED, "attempts": 1, "completed_at": now - timedelta(minutes=6)}
    retrying = {
        "status": JobStatus.PROCESSING,
        "attempts": 2,
        "error_message": "503 Service Unavailable",
        "next_attempt_at": now + timedelta(minutes=24),
    }
    attempts = {
        billing.id: [{"status": "success", "error_message": None, "response_status": 200, "duration_ms": 84}],
        erp.id: [{"response_status": 503, "duration_ms": 1204}, {"response_status": 503, "duration_ms": 988}],
    }
    for endpoint, fields in [(billing, delivered), (erp, retrying)]:
        job = JobFactory(
            account=account,
            message=message,
            endpoint=endpoint,
            payload={"url": endpoint.url, "method": "POST", "payload": message.payload, "eventType": "invoice.paid"},
            max_attempts=8,
            created_at=message.created_at,
            **fields,
        )
        for number, attempt in enumerate(attempts[endpoint.id], start=1):
            made = message.created_at + timedelta(minutes=number)
            DeliveryLogFactory(job=job, attempt=number, created_at=made, **attempt)
