from __future__ import annotations

import base64
from datetime import timedelta

import factory
from django.utils import timezone

from core.crypto import encrypt
from customer_webhooks.messages import MessageSent, message_send
from customer_webhooks.models import App, Endpoint
from customer_webhooks.selectors import app_get_with_enabled_endpoints
from notifications.destination import job_destination
from notifications.models import DeliveryLog, Job, JobStatus, JobTag, JobType
from notifications.services import job_labels
from webhooks_inbound.models import EmailEvent


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job
        skip_postgeneration_save = True

    type = JobType.WEBHOOK
    payload = factory.LazyAttribute(
        lambda job: (
            {"to": "user@example.com", "subject": "Welcome", "body": "<p>Hello</p>"}
            if job.type == JobType.EMAIL
            else {"url": "https://hooks.example.com/in", "payload": {"n": 1}}
        )
    )
    # As the send endpoints store it: an email's recipient, a webhook URL's host.
    destination = factory.LazyAttribute(lambda job: job_destination(job.type, job.payload))
    labels = factory.LazyAttribute(lambda job: job_labels(job.payload))
    created_at = factory.Sequence(lambda n: timezone.now() - timedelta(hours=1) + timedelta(seconds=n))

    @factory.post_generation
    def job_tags(job: Job, create: bool, extracted: object, **kwargs: object) -> None:
        """The rows of the payload's ``tags``, as the store writes them with the job."""
        tags = dict.fromkeys(job.payload.get("tags") or ())
        if create and tags:
            JobTag.objects.bulk_create(
                JobTag(job=job, account=job.account, tag=tag, test=job.test, created_at=job.created_at) for tag in tags
            )


class FailedJobFactory(JobFactory):
    status = JobStatus.FAILED
    attempts = 3
    error_message = "503 Service Unavailable"
    started_at = factory.LazyFunction(timezone.now)


class DeliveryLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DeliveryLog

    status = "failed"
    error_message = "503 Service Unavailable"
    response_status = 503
    duration_ms = 12


class EmailEventFactory(factory.django.DjangoModelFactory):
    """A provider's report on a job's email, as the receivers store it."""

    class Meta:
        model = EmailEvent

    account = factory.SelfAttribute("job.account")
    provider = "SENDGRID"
    type = "DELIVERED"
    recipient = "user@example.com"
    occurred_at = factory.LazyFunction(timezone.now)
    provider_event_id = factory.Sequence(lambda n: f"evt-{n}")
    payload = "{}"


class AppFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = App

    name = factory.Sequence(lambda n: f"Customer {n}")


def message_sent(*, app: App, event_type: str, payload: dict[str, object], test: bool = False) -> MessageSent:
    """A message to the app's enabled endpoints taking ``event_type``, sent as the messages API sends one."""
    _, enabled = app_get_with_enabled_endpoints(account=app.account, app=str(app.id))
    return message_send(
        account=app.account, app=app, enabled_endpoints=enabled, event_type=event_type, payload=payload, test=test
    )


# An endpoint's secret as the API makes one (docs/customer-webhooks.md): ``whsec_`` and base64.
ENDPOINT_SECRET = "whsec_" + base64.b64encode(b"endpoint-secret-for-tests-0123456").decode()


class EndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Endpoint

    url = "https://hooks.example.com/customer"
    encrypted_secret = factory.LazyFunction(lambda: encrypt(ENDPOINT_SECRET))
