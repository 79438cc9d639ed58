from __future__ import annotations

from django.contrib import admin

from domains.models import DomainRegistration, SenderDomain


class DomainRegistrationInline(admin.TabularInline):
    model = DomainRegistration
    fields = readonly_fields = ("provider", "provider_domain_id", "verified", "last_error", "records")
    extra = 0
    can_delete = False


@admin.register(SenderDomain)
class SenderDomainAdmin(admin.ModelAdmin):
    list_display = ["name", "account", "status", "created_at", "verified_at"]
    list_filter = ["status"]
    search_fields = ["name", "account__user__email"]
    readonly_fields = ["account", "name", "status", "warnings", "created_at", "verified_at"]
    inlines = [DomainRegistrationInline]
