from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerView

from accounts.views import AuditView, PingView, UsageView
from core.api.status import HealthView, InfoView
from core.api.views import SchemaView, api_not_found
from core.metrics import MetricsView
from domains.views import DomainView
from notifications.observability import QueueCollector
from notifications.views.jobs import ACCOUNT_HOLDER, JobCancelView, JobDetailView, JobListView, JobRetryView
from notifications.views.stats import DashboardStatsView

urlpatterns = [
    path("api/v1/health", HealthView.as_view(), name="health"),
    path("api/v1/info", InfoView.as_view(), name="info"),
    path("api/v1/ping", PingView.as_view(), name="ping"),
    path("api/v1/notifications/", include("notifications.urls")),
    path("api/v1/user/domain/", include("domains.urls")),
    path("api/v1/user/domain", DomainView.as_view()),
    path("api/v1/user/usage", UsageView.as_view(), name="user-usage"),
    path("api/v1/user/audit", AuditView.as_view(), name="user-audit"),
    path("api/v1/user/dashboard", DashboardStatsView.as_view(), name="user-dashboard"),
    # The job views that notifications/urls.py mounts for API clients, mounted again for the account holder.
    path("api/v1/user/jobs", JobListView.as_view(mount=ACCOUNT_HOLDER), name="user-job-list"),
    path("api/v1/user/jobs/<str:job_id>", JobDetailView.as_view(mount=ACCOUNT_HOLDER), name="user-job-detail"),
    path("api/v1/user/jobs/<str:job_id>/retry", JobRetryView.as_view(mount=ACCOUNT_HOLDER), name="user-job-retry"),
    path("api/v1/user/jobs/<str:job_id>/cancel", JobCancelView.as_view(mount=ACCOUNT_HOLDER), name="user-job-cancel"),
    path("api/v1/suppressions", include("suppressions.urls")),
    path("api/v1/event-endpoints", include("event_endpoints.urls")),
    path("api/v1/templates", include("email_templates.urls")),
    path("api/v1/apps", include("customer_webhooks.urls")),
    path("api/v1/webhooks/", include("webhooks_inbound.urls")),
    path("api/v1/admin/", include("staff.urls")),
    path("api/v1/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # Every other path under /api/, a newline in it too (`.` stops at one; an inline `(?s)` would break reverse()).
    re_path(r"^api/(?P<path>[\s\S]*)$", api_not_found),
    path("admin/", admin.site.urls),
    path("metrics", MetricsView.as_view(collectors=[QueueCollector()]), name="metrics"),
    path("", include("dashboard.urls")),
]

handler400 = "core.api.views.handle_bad_request"
handler500 = "core.api.views.handle_server_error"
