from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from accounts.models import Account
from notifications.models import DeliveryLog, Job, JobStatus, JobType
from notifications.services import job_labels
from tests.clients import APIClient
from tests.conftest import Client
from tests.fakes.events import Delivery, PostmarkEvents, ResendEvents, SendGridEvents
from webhooks_inbound.services import postmark_password_generate, resend_secret_set, sendgrid_key_set

SentEmail = Callable[..., tuple[Job, str]]


def receiver_path(slug: str, account: Account | str) -> str:
    customer_id = account.public_id if isinstance(account, Account) else account
    return f"/api/v1/webhooks/{slug}/{customer_id}"


def post_events(slug: str, account: Account | str, delivery: Delivery) -> Any:
    """What a provider's POST gets back; no API key, no session, as from the provider's servers."""
    return APIClient().post(
        receiver_path(slug, account), delivery.body, content_type="application/json", headers=delivery.headers
    )


@pytest.fixture
def holder(startup: Client) -> Client:
    return startup


@pytest.fixture
def sent_email() -> SentEmail:
    """An email job of ``account`` that ``provider`` accepted under a message id, as the worker leaves it."""

    def make(
        account: Account, provider: str = "POSTMARK", message_id: str | None = None, **payload: Any
    ) -> tuple[Job, str]:
        """``payload``: what the email's payload holds beside its recipient, subject and body (tags, metadata)."""
        message_id = message_id or str(uuid.uuid4())
        full_payload = {"to": "user@example.com", "subject": "Welcome", "body": "<p>Hi</p>", **payload}
        job = Job.objects.create(
            account=account,
            type=JobType.EMAIL,
            status=JobStatus.COMPLETED,
            payload=full_payload,
            labels=job_labels(full_payload),
            attempts=1,
        )
        DeliveryLog.objects.create(
            job=job, attempt=1, status="success", used_provider=provider, provider_message_id=message_id
        )
        return job, message_id

    return make


@pytest.fixture
def postmark_events(holder: Client) -> PostmarkEvents:
    return PostmarkEvents(postmark_password_generate(account=holder.account))


@pytest.fixture
def sendgrid_events(holder: Client) -> SendGridEvents:
    events = SendGridEvents()
    sendgrid_key_set(account=holder.account, verification_key=events.verification_key)
    return events


@pytest.fixture
def resend_events(holder: Client) -> ResendEvents:
    events = ResendEvents()
    resend_secret_set(account=holder.account, signing_secret=events.secret)
    return events
