from __future__ import annotations

from dataclasses import dataclass

from accounts.models import Account
from domains.models import DomainRegistration, SenderDomain
from notifications.models import Attachment, DeliveryLog, Job
from webhooks_inbound.models import EmailEvent

# For people, in the order of AccountContents' fields.
LABELS = [
    ("job", "jobs"),
    ("delivery log", "delivery logs"),
    ("attachment", "attachments"),
    ("event", "events"),
    ("sending domain", "sending domains"),
    ("domain registration", "domain registrations"),
    ("API key", "API keys"),
    ("provider key", "provider keys"),
]


@dataclass(frozen=True)
class AccountContents:
    """What erasing an account removes, counted: staff read it before they confirm, and after."""

    jobs: int
    delivery_logs: int
    attachments: int
    events: int
    domains: int
    domain_registrations: int
    api_keys: int
    provider_keys: int

    def summary(self) -> str:
        """``1 job, 3 delivery logs, ...``: for people."""
        counts = zip(self.as_dict().values(), LABELS, strict=True)
        return ", ".join(f"{count} {singular if count == 1 else plural}" for count, (singular, plural) in counts)

    def as_dict(self) -> dict[str, int]:
        return {
            "jobs": self.jobs,
            "deliveryLogs": self.delivery_logs,
            "attachments": self.attachments,
            "events": self.events,
            "domains": self.domains,
            "domainRegistrations": self.domain_registrations,
            "apiKeys": self.api_keys,
            "providerKeys": self.provider_keys,
        }


def account_contents(*, account: Account) -> AccountContents:
    return AccountContents(
        jobs=Job.objects.filter(account=account).count(),
        delivery_logs=DeliveryLog.objects.filter(job__account=account).count(),
        attachments=Attachment.objects.filter(job__account=account).count(),
        events=EmailEvent.objects.filter(account=account).count(),
        domains=SenderDomain.objects.filter(account=account).count(),
        domain_registrations=DomainRegistration.objects.filter(domain__account=account).count(),
        api_keys=account.api_keys.count(),
        provider_keys=account.provider_keys.count(),
    )


def account_of_user(*, user_id: int) -> Account | None:
    """The holder's account of a user id (the admin endpoints' ``<id>``); None for staff without one."""
    return Account.objects.select_related("user").filter(user_id=user_id).first()
