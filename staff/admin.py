"""The Django admin as staff's console: accounts with their actions, jobs, domains, events, suppressions, templates
and apps.

Every change goes through the services the API and the commands use, never a bare save, and
nothing secret is shown: API keys by their hint, provider keys by name, no signing secret,
tracking credential or webhook URL credentials.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected as stock_delete_selected
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import OuterRef, QuerySet, Subquery
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from accounts.models import MAX_RATE_LIMIT, Account, ApiKey, AuditEntry, ProviderKey, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import current_period
from accounts.services import (
    account_delete,
    account_restore,
    account_set_monthly_limit,
    account_set_plan,
    account_set_rate_limit,
    rate_limit_described,
    usage_reset,
)
from core.errors import DomainError, SuppressionNotFound
from customer_webhooks.models import App, Endpoint
from domains.models import DomainRegistration, SenderDomain
from email_templates.models import Template, TemplateVersion
from event_endpoints.models import EventEndpoint
from event_endpoints.services import endpoint_delete
from notifications.models import DeliveryLog, Job, JobStatus
from notifications.selectors import job_payload_for_staff
from notifications.services import job_retry
from staff.selectors import account_contents
from staff.services import account_erase
from suppressions.models import Suppression
from suppressions.services import suppression_remove
from webhooks_inbound.models import EmailEvent

ACTION_TEMPLATE = "admin/staff/account_action.html"

# The most rows one action takes in one request, so that "select all" stays within the web timeout
# (docs/staff.md#limits). Erasing is bounded tighter: each account's sending domain is removed at every
# provider, a network call each.
ROWS_PER_ACTION = 100
ACCOUNTS_PER_ERASE = 20
JOBS_PER_RETRY = 500
# The audit entries an account's page shows, newest first: an account's log only grows.
AUDIT_ENTRIES_SHOWN = 50
NARROW_THE_LIST = "Narrow the list with its filters or search, and act on one part at a time."
TOO_MANY = "{selected} {rows} selected, more than the {limit} this action takes at a time: nothing was changed. {hint}"

Action = TypeVar("Action", bound=Callable[..., HttpResponse | None])


def at_most(limit: int, *, hint: str) -> Callable[[Action], Action]:
    """Refuses the action, changing nothing, when more than ``limit`` rows are selected."""

    def bound(action: Action) -> Action:
        @functools.wraps(action)
        def bounded(
            model_admin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Any]
        ) -> HttpResponse | None:
            selected = queryset.count()
            if selected > limit:
                rows = model_admin.model._meta.verbose_name_plural
                too_many = TOO_MANY.format(selected=selected, rows=rows, limit=limit, hint=hint)
                model_admin.message_user(request, too_many, messages.ERROR)
                return None
            return action(model_admin, request, queryset)

        return cast(Action, bounded)

    return bound


# Django's own "Delete selected" (same name, so it stands in for the site's), bounded too: before it asks, it
# lists every row that would go, with all that cascades from them.
delete_selected = at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)(stock_delete_selected)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# --- Accounts -------------------------------------------------------------------------------------


class ApiKeyInline(ReadOnlyInline):
    model = ApiKey
    fields = readonly_fields = ("name", "scope", "hint", "created_at", "last_used_at", "revoked_at")


class ProviderKeyInline(ReadOnlyInline):
    model = ProviderKey
    # Keys stay encrypted and out of sight; operators change them with `manage.py providerkey`.
    fields = readonly_fields = ("provider", "priority", "created_at")


class UsagePeriodInline(ReadOnlyInline):
    model = UsagePeriod
    fields = readonly_fields = ("period_start", "used")
    ordering = ("-period_start",)


class NewestAuditEntries(BaseInlineFormSet):
    """The account's newest AUDIT_ENTRIES_SHOWN entries: the inline's query is cut once it is the account's."""

    def get_queryset(self) -> QuerySet[AuditEntry]:
        if not hasattr(self, "_newest"):
            self._newest = super().get_queryset().select_related("api_key")[:AUDIT_ENTRIES_SHOWN]
        return self._newest


class AuditEntryInline(ReadOnlyInline):
    """The account's audit log (docs/rules.md, "Audit log"), read-only: entries are written by the services alone."""

    model = AuditEntry
    formset = NewestAuditEntries
    fields = readonly_fields = ("created_at", "action", "actor", "target", "ip", "api_key_used")
    ordering = ("-created_at", "-id")
    verbose_name_plural = f"audit log (the newest {AUDIT_ENTRIES_SHOWN})"

    @admin.display(description="API key")
    def api_key_used(self, entry: AuditEntry) -> str:
        return entry.api_key_label or "—"


def account_rows_link(account: Account, changelist: str, label: str) -> str:
    """A link to ``changelist`` filtered to the account's rows: too many to show on the account's page."""
    url = reverse(changelist) + f"?account__id__exact={account.pk}"
    return format_html('<a href="{}">{}</a>', url, label)


class AccountState(admin.SimpleListFilter):
    title = parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "Active"), ("deleted", "Deleted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Account]) -> QuerySet[Account]:
        if self.value() == "active":
            return queryset.filter(deleted_at__isnull=True)
        if self.value() == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


class PlanForm(forms.Form):
    plan = forms.ChoiceField(choices=Plan.choices, help_text="A new plan starts a new billing cycle today.")


class MonthlyLimitForm(forms.Form):
    limit = forms.IntegerField(
        min_value=1,
        required=False,
        label="Monthly limit",
        help_text="Notifications a billing cycle, in place of the plan's quota. Empty: back to the plan's.",
    )


class RateLimitForm(forms.Form):
    rate = forms.IntegerField(
        min_value=1,
        max_value=MAX_RATE_LIMIT,
        required=False,
        label="Rate limit",
        help_text="Requests a minute per API key, in place of the plan's. Empty: back to the plan's.",
    )


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = [
        "email",
        "plan",
        "state",
        "usage",
        "monthly_limit",
        "rate_limit",
        "jobs",
        "suppressions",
        "created_at",
    ]
    list_filter = ["plan", AccountState]
    search_fields = ["user__email", "public_id"]
    list_select_related = ["user"]
    ordering = ["-created_at"]
    # Read-only: plans, limits, usage and deletion change through the actions, which call the services.
    fields = readonly_fields = (
        "user",
        "public_id",
        "plan",
        "plan_started_on",
        "monthly_limit",
        "rate_limit",
        "is_active",
        "email_confirmed_at",
        "deleted_at",
        "created_at",
    )
    inlines = [ApiKeyInline, ProviderKeyInline, UsagePeriodInline, AuditEntryInline]
    actions = ["soft_delete", "restore", "erase", "change_plan", "set_monthly_limit", "set_rate_limit", "reset_usage"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Account]:
        # The newest usage row, with its period: it is this cycle's when its start is the cycle's (checked per row).
        newest = UsagePeriod.objects.filter(account=OuterRef("pk")).order_by("-period_start")
        return (
            super()
            .get_queryset(request)
            .annotate(
                newest_period_start=Subquery(newest.values("period_start")[:1]),
                newest_period_used=Subquery(newest.values("used")[:1]),
            )
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # accounts come from sign-up or `manage.py createaccount`

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the erase action deletes, with the domain at the providers and a confirmation

    def has_erase_permission(self, request: HttpRequest) -> bool:
        # Django's own delete stays hidden (above); erasing needs the model permission it would have needed.
        return super().has_delete_permission(request)

    @admin.display(ordering="user__email")
    def email(self, account: Account) -> str:
        return account.user.email

    @admin.display(description="State")
    def state(self, account: Account) -> str:
        return "deleted" if account.deleted_at else "active"

    @admin.display(description="Usage this cycle")
    def usage(self, account: Any) -> str:
        start, _ = current_period(account)
        used = account.newest_period_used if account.newest_period_start == start else 0
        return f"{used} / {account.limits.monthly_quota}"

    @admin.display(description="Jobs")
    def jobs(self, account: Account) -> str:
        return account_rows_link(account, "admin:notifications_job_changelist", "jobs")

    @admin.display(description="Suppressions")
    def suppressions(self, account: Account) -> str:
        return account_rows_link(account, "admin:suppressions_suppression_changelist", "suppressions")

    @admin.action(description="Soft-delete (the key answers 403; restorable)", permissions=["change"])
    @at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)
    def soft_delete(self, request: HttpRequest, queryset: QuerySet[Account]) -> None:
        accounts = [account for account in queryset if account.deleted_at is None]
        for account in accounts:
            account_delete(account=account)
        self.message_user(request, f"{len(accounts)} account(s) deleted; staff can restore them.")

    @admin.action(description="Restore deleted accounts", permissions=["change"])
    @at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)
    def restore(self, request: HttpRequest, queryset: QuerySet[Account]) -> None:
        restored = 0
        for account in queryset:
            try:
                account_restore(account=account)
            except DomainError:
                continue  # not deleted: nothing to restore
            restored += 1
        self.message_user(request, f"{restored} account(s) restored: they sign in and their keys work again.")

    @admin.action(description="Delete for good…", permissions=["erase"])
    @at_most(ACCOUNTS_PER_ERASE, hint=NARROW_THE_LIST)
    def erase(self, request: HttpRequest, queryset: QuerySet[Account]) -> HttpResponse | None:
        if "apply" not in request.POST:
            contents = [(account, account_contents(account=account).summary()) for account in queryset]
            return self._action_page(request, queryset, "erase", title="Delete for good?", contents=contents)
        for account in queryset:
            erased = account_erase(account=account)
            # (The admin capitalises a message's first letter: it does not start with the address.)
            self.message_user(request, f"Deleted {erased.email} for good: {erased.contents.summary()}.")
            for warning in erased.warnings:
                message = f"{warning['provider']} kept {erased.email}'s sending domain ({warning['reason']})."
                self.message_user(request, f"{message} Remove it there.", messages.WARNING)
        return None

    @admin.action(description="Change plan…", permissions=["change"])
    @at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)
    def change_plan(self, request: HttpRequest, queryset: QuerySet[Account]) -> HttpResponse | None:
        form = PlanForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return self._action_page(request, queryset, "change_plan", title="Change plan", form=form)
        for account in queryset:
            account_set_plan(account=account, plan=form.cleaned_data["plan"])
        self.message_user(request, f"{queryset.count()} account(s) moved to {form.cleaned_data['plan']}.")
        return None

    @admin.action(description="Set a custom monthly limit…", permissions=["change"])
    @at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)
    def set_monthly_limit(self, request: HttpRequest, queryset: QuerySet[Account]) -> HttpResponse | None:
        form = MonthlyLimitForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return self._action_page(request, queryset, "set_monthly_limit", title="Set a monthly limit", form=form)
        limit = form.cleaned_data["limit"]
        for account in queryset:
            account_set_monthly_limit(account=account, limit=limit)
        described = f"a monthly limit of {limit}" if limit else "their plan's quota"
        self.message_user(request, f"{queryset.count()} account(s) now have {described}.")
        return None

    @admin.action(description="Set a custom rate limit…", permissions=["change"])
    @at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)
    def set_rate_limit(self, request: HttpRequest, queryset: QuerySet[Account]) -> HttpResponse | None:
        form = RateLimitForm(request.POST if "apply" in request.POST else None)
        if not form.is_valid():
            return self._action_page(request, queryset, "set_rate_limit", title="Set a rate limit", form=form)
        rate = form.cleaned_data["rate"]
        for account in queryset:
            account_set_rate_limit(account=account, rate=rate)
        described = f"a rate limit of {rate_limit_described(rate)}" if rate else "their plan's rate limit"
        self.message_user(request, f"{queryset.count()} account(s) now have {described}.")
        return None

    @admin.action(description="Reset this cycle's usage to 0", permissions=["change"])
    @at_most(ROWS_PER_ACTION, hint=NARROW_THE_LIST)
    def reset_usage(self, request: HttpRequest, queryset: QuerySet[Account]) -> None:
        for account in queryset:
            usage_reset(account=account)
        self.message_user(request, f"Usage reset to 0 for {queryset.count()} account(s).")

    def _action_page(
        self, request: HttpRequest, queryset: QuerySet[Account], action: str, *, title: str, **context: Any
    ) -> TemplateResponse:
        """The page an action asks on before it acts: the accounts chosen and the action's form or list."""
        return TemplateResponse(
            request,
            ACTION_TEMPLATE,
            {
                **self.admin_site.each_context(request),
                "title": title,
                "action": action,
                "accounts": queryset,
                "opts": self.model._meta,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                **context,
            },
        )


# --- Jobs -----------------------------------------------------------------------------------------


class DeliveryLogInline(ReadOnlyInline):
    model = DeliveryLog
    fields = readonly_fields = (
        "attempt",
        "status",
        "used_provider",
        "response_status",
        "duration_ms",
        "error_message",
        "response_excerpt",
        "created_at",
    )
    ordering = ("created_at",)


class EmailEventInline(ReadOnlyInline):
    model = EmailEvent
    fields = readonly_fields = ("occurred_at", "type", "provider", "recipient")
    ordering = ("occurred_at",)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "account", "type", "status", "priority", "attempts", "test", "created_at", "finished_at"]
    # By account: the account list's "jobs" link, or ?account__id__exact=<id>; by date: the hierarchy above.
    list_filter = ["type", "status", "priority", "test", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["id", "account__user__email", "idempotency_key"]
    list_select_related = ["account__user"]
    date_hierarchy = "created_at"
    ordering = ["-created_at"]
    # The admin only shows a job; its state changes through the services (the retry action here). Its secrets
    # never show: URL credentials and secret header values stay encrypted, and the payload shows those headers
    # masked (notifications/secret_headers.py).
    exclude = ["url_credentials", "secret_headers", "payload"]
    readonly_fields = [
        "payload_masked" if field.name == "payload" else field.name
        for field in Job._meta.fields
        if field.name not in ("url_credentials", "secret_headers")
    ]
    inlines = [DeliveryLogInline, EmailEventInline]
    actions = ["retry", delete_selected]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="Payload")
    def payload_masked(self, job: Job) -> str:
        return json.dumps(job_payload_for_staff(job), indent=2, ensure_ascii=False)

    @admin.action(description="Retry failed jobs", permissions=["change"])
    @at_most(JOBS_PER_RETRY, hint="For more, an operator runs manage.py retryfailed (docs/operations.md).")
    def retry(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        retried, refused = 0, []
        skipped = queryset.exclude(status=JobStatus.FAILED).count()
        for job in queryset.filter(status=JobStatus.FAILED).select_related("account"):
            try:
                job_retry(account=job.account, job_id=str(job.id), test=job.test)
            except DomainError as error:
                refused.append(f"{job.id}: {error.message}")
                continue
            retried += 1
        self.message_user(request, f"{retried} job(s) re-queued; {skipped} not failed, left as they were.")
        for reason in refused:
            self.message_user(request, reason, messages.WARNING)


# --- Domains and events ---------------------------------------------------------------------------


class DomainRegistrationInline(ReadOnlyInline):
    model = DomainRegistration
    fields = readonly_fields = ("provider", "provider_domain_id", "verified", "last_error", "records")


@admin.register(SenderDomain)
class SenderDomainAdmin(admin.ModelAdmin):
    list_display = ["name", "account", "status", "created_at", "verified_at"]
    list_filter = ["status"]
    search_fields = ["name", "account__user__email"]
    list_select_related = ["account__user"]
    readonly_fields = ["account", "name", "status", "warnings", "created_at", "verified_at"]
    inlines = [DomainRegistrationInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A bare delete would leave the domain registered at every provider: domains go through
        # domains.services.domain_delete (the holder's page, the API) or with their account (the erase action).
        return False


@admin.register(EmailEvent)
class EmailEventAdmin(admin.ModelAdmin):
    """Read-only: events are what a provider said; staff look them up for support."""

    list_display = ["occurred_at", "type", "provider", "recipient", "linked_job", "account"]
    list_filter = ["type", "provider"]
    search_fields = ["recipient", "job__id", "account__user__email", "provider_event_id"]
    list_select_related = ["account__user"]
    readonly_fields = [field.name for field in EmailEvent._meta.fields]
    actions = [delete_selected]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Job", ordering="job")
    def linked_job(self, event: EmailEvent) -> str:
        # The event's own job_id links to the job: a page of events reads no job row.
        url = reverse("admin:notifications_job_change", args=[event.job_id])
        return format_html('<a href="{}">{}</a>', url, event.job_id)


@admin.register(Suppression)
class SuppressionAdmin(admin.ModelAdmin):
    """Read-only: addresses come on the list through the API, the commands and providers' events. Taking one off
    goes through suppressions.services.suppression_remove, as the API's removal does, so the account's audit log
    records it."""

    list_display = ["email", "account", "reason", "provider", "job_id", "created_at"]
    # By account: the account list's "suppressions" link, or ?account__id__exact=<id>.
    list_filter = ["reason", "provider"]
    search_fields = ["email", "account__user__email"]
    list_select_related = ["account__user"]
    readonly_fields = [field.name for field in Suppression._meta.fields]
    actions = [delete_selected]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # added by hand through the API or `manage.py suppressions`, which check the address

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: Suppression) -> None:
        with contextlib.suppress(SuppressionNotFound):  # taken off meanwhile: nothing is left to remove
            suppression_remove(account=obj.account, email=obj.email)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Suppression]) -> None:
        for suppression in queryset.select_related("account"):
            self.delete_model(request, suppression)


@admin.register(EventEndpoint)
class EventEndpointAdmin(admin.ModelAdmin):
    """Read-only: holders add endpoints through the API and the dashboard, which check the URL. Deleting one goes
    through event_endpoints.services.endpoint_delete, so its account's ``has_event_endpoints`` stays true."""

    list_display = ["url", "account", "events", "created_at"]
    search_fields = ["url", "account__user__email"]
    list_select_related = ["account__user"]
    # Its credentials stay encrypted and out of sight, as a job's do.
    fields = readonly_fields = ("id", "account", "url", "events", "created_at")
    actions = [delete_selected]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: EventEndpoint) -> None:
        endpoint_delete(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[EventEndpoint]) -> None:
        for endpoint in queryset.select_related("account"):
            endpoint_delete(endpoint)


class TemplateVersionInline(admin.TabularInline):
    model = TemplateVersion
    fields = readonly_fields = ("version", "subject", "variables", "created_at")
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Template)
class TemplateAdmin(admin.ModelAdmin):
    """Read-only: templates are the account's, saved through the API (docs/templates.md); staff read them and their
    versions to help a holder."""

    list_display = ["alias", "name", "account", "created_at", "updated_at"]
    search_fields = ["alias", "name", "account__user__email"]
    list_select_related = ["account__user"]
    readonly_fields = [field.name for field in Template._meta.fields]
    inlines = [TemplateVersionInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EndpointInline(ReadOnlyInline):
    model = Endpoint
    # Its secrets and URL credentials stay encrypted and out of sight.
    fields = readonly_fields = (
        "url",
        "event_types",
        "description",
        "rate_limit",
        "disabled",
        "disabled_reason",
        "failing_since",
        "created_at",
    )
    show_change_link = False


@admin.register(App)
class AppAdmin(admin.ModelAdmin):
    """Read-only: apps and their endpoints are the account's, changed through the API (docs/customer-webhooks.md);
    staff read them to help a holder."""

    list_display = ["name", "uid", "account", "created_at"]
    search_fields = ["uid", "name", "account__user__email"]
    list_select_related = ["account__user"]
    readonly_fields = [field.name for field in App._meta.fields]
    inlines = [EndpointInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
