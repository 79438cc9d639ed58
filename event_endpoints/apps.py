from __future__ import annotations

from django.apps import AppConfig


class EventEndpointsConfig(AppConfig):
    name = "event_endpoints"
    verbose_name = "Event endpoints"
