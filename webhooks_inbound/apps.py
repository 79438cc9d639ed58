from __future__ import annotations

from django.apps import AppConfig


class WebhooksInboundConfig(AppConfig):
    name = "webhooks_inbound"
    verbose_name = "Provider events"
