from __future__ import annotations

from django.contrib import admin

from webhooks_inbound.models import EmailEvent


@admin.register(EmailEvent)
class EmailEventAdmin(admin.ModelAdmin):
    """Read-only: events are what a provider said; staff look them up for support."""

    list_display = ["occurred_at", "type", "provider", "recipient", "job", "account"]
    list_filter = ["type", "provider"]
    search_fields = ["recipient", "job__id", "account__user__email", "provider_event_id"]
    list_select_related = ["account__user"]
    readonly_fields = [field.name for field in EmailEvent._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
