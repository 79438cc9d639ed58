"""Send-time rules for paid plans: provider keys, routing, the verified domain, the sender."""

from __future__ import annotations

import pytest

from accounts.services import provider_key_remove
from domains.models import DomainStatus, SenderDomain
from notifications.models import Job
from tests.api.test_envelope import assert_error
from tests.conftest import Client, ready_to_send
from tests.factories import FailedJobFactory

NO_PROVIDER = (
    "Please add at least one email provider API key (SendGrid, Resend, or Postmark) in Settings before sending emails."
)
NO_DOMAIN = "Paid plans must use a verified sending domain. Please add and verify your domain in Settings."


def test_a_paid_account_without_provider_keys_is_refused(startup: Client) -> None:
    assert_error(startup.send_email(), 403, NO_PROVIDER)
    assert startup.account.jobs.count() == 0


def test_a_paid_account_without_a_domain_is_refused(startup: Client) -> None:
    ready_to_send(startup)
    SenderDomain.objects.filter(account=startup.account).delete()

    assert_error(startup.send_email(), 403, NO_DOMAIN)


def test_a_domain_pending_verification_is_refused(startup: Client) -> None:
    ready_to_send(startup)
    SenderDomain.objects.filter(account=startup.account).update(status=DomainStatus.PENDING)

    assert_error(
        startup.send_email(),
        403,
        "Your sending domain is pending verification. Please complete domain verification in Settings.",
    )


def test_the_provider_key_is_checked_before_the_domain(startup: Client) -> None:
    assert_error(startup.send_email(), 403, NO_PROVIDER)


@pytest.mark.parametrize(
    ("routing", "message"),
    [
        ({"provider": "POSTMARK"}, "Provider POSTMARK is not configured for this customer"),
        (
            {"provider": "SENDGRID", "fallback": "RESEND"},
            "Fallback provider RESEND is not configured for this customer",
        ),
    ],
)
def test_routing_to_an_unconfigured_provider_is_refused(startup: Client, routing: dict[str, str], message: str) -> None:
    ready_to_send(startup, "SENDGRID")

    assert_error(startup.send_email(**routing), 400, message)


@pytest.mark.parametrize("sender", [None, "billing@example.com", "Billing@EXAMPLE.com", "news@em.example.com"])
def test_senders_on_the_verified_domain_are_accepted(startup: Client, sender: str | None) -> None:
    ready_to_send(startup)
    fields = {"from": sender} if sender else {}

    response = startup.send_email(**fields)

    assert response.status_code == 202
    assert Job.objects.get(id=response.json()["data"]["jobId"]).payload.get("from") == sender


@pytest.mark.parametrize("sender", ["me@other.com", "me@mail.example.com", "me@example.com.evil.net"])
def test_a_sender_on_another_domain_is_refused(startup: Client, sender: str) -> None:
    ready_to_send(startup)

    assert_error(
        startup.send_email(**{"from": sender}),
        400,
        f"Cannot send from {sender}. Use your verified domain example.com instead.",
    )


def test_priority_is_allowed_on_paid_plans(startup: Client) -> None:
    ready_to_send(startup)

    response = startup.send_email(priority=10)

    assert Job.objects.get(id=response.json()["data"]["jobId"]).priority == 10


def test_retrying_a_paid_email_without_provider_keys_is_400(startup: Client) -> None:
    ready_to_send(startup)
    job = FailedJobFactory(account=startup.account, type="email", payload={"to": "a@b.co", "subject": "s", "body": "b"})
    provider_key_remove(account=startup.account, provider="SENDGRID")

    response = startup.post(f"/api/v1/notifications/jobs/{job.id}/retry")

    assert_error(response, 400, NO_PROVIDER)
    job.refresh_from_db()
    assert job.status == "failed"


def test_retrying_a_paid_webhook_needs_no_provider_key(startup: Client) -> None:
    job = FailedJobFactory(account=startup.account)

    assert startup.post(f"/api/v1/notifications/jobs/{job.id}/retry").status_code == 200
