"""A paid holder whose pages all have something to show: provider keys, a verified domain, secrets, jobs, usage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from accounts.models import Account, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import current_period
from accounts.services import account_create, provider_key_set, signing_secret_generate
from domains.models import DomainRegistration, DomainStatus, SenderDomain
from notifications.models import JobStatus, JobType
from tests.factories import FailedJobFactory, JobFactory
from webhooks_inbound.services import postmark_password_generate

DEMO_EMAIL = "ada@example.com"
DEMO_PASSWORD = "correct-horse-battery-staple"
DEMO_DOMAIN = "example.com"
WEBHOOKS_USED = 3_214

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
    for provider in DEMO_RECORDS:
        provider_key_set(account=account, provider=provider, api_key=f"{provider.lower()}-demo-key")
    _verified_domain(account)
    signing_secret_generate(account=account)
    postmark_password_generate(account=account)
    _jobs(account)
    UsagePeriod.objects.update_or_create(
        account=account, period_start=current_period(account)[0], defaults={"used": WEBHOOKS_USED}
    )
    return DemoHolder(account=account, email=email, password=password)


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
    now = timezone.now()
    JobFactory.create_batch(3, account=account, status=JobStatus.COMPLETED, attempts=1, completed_at=now)
    JobFactory(
        account=account,
        type=JobType.EMAIL,
        status=JobStatus.COMPLETED,
        attempts=1,
        completed_at=now,
        payload={"to": "grace@example.com", "subject": "Your receipt", "body": "<p>Thanks!</p>"},
    )
    FailedJobFactory(account=account, completed_at=now - timedelta(minutes=5))
