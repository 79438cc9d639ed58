from __future__ import annotations

import uuid

from django.conf import settings
from django.urls import reverse

from accounts.models import Account
from providers.names import ProviderName
from webhooks_inbound.models import TrackingCredentials

# The receivers' URL slugs, in the order the dashboard and `manage.py trackingsecret` list them.
RECEIVER_SLUGS = {ProviderName.POSTMARK: "postmark", ProviderName.SENDGRID: "sendgrid", ProviderName.RESEND: "resend"}


def receiving_account(*, customer_id: str) -> Account | None:
    """The account a receiver URL names by its public id, with its credentials; a deleted account is none."""
    try:
        public_id = uuid.UUID(customer_id)
    except ValueError:
        return None
    accounts = Account.objects.select_related("tracking_credentials")
    return accounts.filter(public_id=public_id, deleted_at__isnull=True).first()


def tracking_credentials_of(account: Account) -> TrackingCredentials | None:
    try:
        return account.tracking_credentials
    except TrackingCredentials.DoesNotExist:
        return None


def receiver_urls(*, account: Account) -> dict[str, str]:
    """Where each provider should send the account's events, as absolute URLs under PUBLIC_URL."""
    base = settings.PUBLIC_URL.rstrip("/")
    return {
        provider: base + reverse(f"{slug}-events", args=[account.public_id])
        for provider, slug in RECEIVER_SLUGS.items()
    }
