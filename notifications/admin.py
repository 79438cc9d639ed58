from __future__ import annotations

from django.contrib import admin

from notifications.models import DeliveryLog, Job


class DeliveryLogInline(admin.TabularInline):
    model = DeliveryLog
    fields = readonly_fields = (
        "attempt",
        "status",
        "used_provider",
        "error_message",
        "response_status",
        "duration_ms",
        "created_at",
    )
    ordering = ("created_at",)
    extra = 0
    can_delete = False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "account", "type", "status", "priority", "attempts", "created_at", "completed_at"]
    list_filter = ["type", "status", "priority"]
    search_fields = ["id", "account__user__email", "idempotency_key"]
    list_select_related = ["account__user"]
    date_hierarchy = "created_at"
    # State changes go through the services (and the API's retry); the admin only shows, and
    # never a secret.
    exclude = ["url_credentials"]
    readonly_fields = [field.name for field in Job._meta.fields if field.name != "url_credentials"]
    inlines = [DeliveryLogInline]

    def has_add_permission(self, request: object) -> bool:
        return False
