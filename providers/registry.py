"""Provider name to implementation, imported on first use."""

from __future__ import annotations

from functools import cache

from django.utils.module_loading import import_string

from providers.base import EmailProvider

PROVIDER_CLASSES = {
    "SENDGRID": "providers.sendgrid.SendGrid",
    "RESEND": "providers.resend.Resend",
    "POSTMARK": "providers.postmark.Postmark",
}


@cache
def get_provider(name: str) -> EmailProvider:
    provider: EmailProvider = import_string(PROVIDER_CLASSES[name])()
    return provider
