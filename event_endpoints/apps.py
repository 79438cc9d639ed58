from __future__ import annotations

from django.apps import AppConfig


class EventEndpointsConfig(AppConfig):
    name = "event_endpoints"
    verbose_name = "Event endpoints"

    def ready(self) -> None:
        from core.signals import account_events
        from event_endpoints.services import announced_store

        # What the apps below announce is stored here, in their transaction (docs/event-endpoints.md).
        account_events.connect(announced_store, dispatch_uid="event_endpoints.announced_store")
