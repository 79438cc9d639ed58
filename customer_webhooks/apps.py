from __future__ import annotations

from django.apps import AppConfig


class CustomerWebhooksConfig(AppConfig):
    name = "customer_webhooks"
    verbose_name = "Webhooks for customers"
