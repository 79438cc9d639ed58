from __future__ import annotations

from django.contrib import admin

from accounts.models import Account, ApiKey, ProviderKey, UsagePeriod


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    fields = readonly_fields = ("hint", "created_at", "revoked_at")
    extra = 0
    can_delete = False


class ProviderKeyInline(admin.TabularInline):
    model = ProviderKey
    # Keys stay encrypted and out of sight; operators change them with `manage.py providerkey`.
    fields = readonly_fields = ("provider", "priority", "created_at")
    extra = 0


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ["user", "plan", "plan_started_on", "is_active", "deleted_at", "created_at"]
    list_filter = ["plan", "is_active"]
    search_fields = ["user__email", "public_id"]
    # The public id is the customerId of the account's provider-event receiver URLs.
    readonly_fields = ["public_id"]
    inlines = [ApiKeyInline, ProviderKeyInline]


@admin.register(UsagePeriod)
class UsagePeriodAdmin(admin.ModelAdmin):
    list_display = ["account", "period_start", "used"]
    search_fields = ["account__user__email"]
