from __future__ import annotations

from types import ModuleType

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path

from dashboard.views import (
    apps,
    audit,
    auth,
    domain,
    endpoints,
    events,
    jobs,
    pages,
    portal,
    providers,
    suppressions,
    templates,
    unsubscribe,
    webhooks,
)
from dashboard.views.auth import PasswordResetView, SignInView, SignUpView


def app_pages(root: str, views: ModuleType, *, name: str) -> list[URLPattern]:
    """One app's pages (dashboard/views/app_pages.py) below ``root``, named ``name`` and ``<name>-<page>``: ``views``
    is the module of their classes, dashboard/views/apps.py for the holder or dashboard/views/portal.py for the
    app's customer."""
    endpoint, message = "endpoints/<uuid:endpoint_id>/", "messages/<uuid:message_id>/"
    return [
        path(root, views.AppView.as_view(), name=name),
        path(root + endpoint, views.EndpointView.as_view(), name=f"{name}-endpoint"),
        path(root + endpoint + "disable/", views.EndpointDisableView.as_view(), name=f"{name}-endpoint-disable"),
        path(root + endpoint + "enable/", views.EndpointEnableView.as_view(), name=f"{name}-endpoint-enable"),
        path(root + endpoint + "delete/", views.EndpointDeleteView.as_view(), name=f"{name}-endpoint-delete"),
        path(root + endpoint + "secret/", views.EndpointSecretView.as_view(), name=f"{name}-endpoint-secret"),
        path(root + endpoint + "rotate/", views.EndpointRotateView.as_view(), name=f"{name}-endpoint-rotate"),
        path(root + endpoint + "recover/", views.EndpointRecoverView.as_view(), name=f"{name}-endpoint-recover"),
        path(root + message, views.MessageView.as_view(), name=f"{name}-message"),
        path(
            root + message + "deliveries/<uuid:job_id>/resend/",
            views.DeliveryResendView.as_view(),
            name=f"{name}-delivery-resend",
        ),
    ]


urlpatterns = [
    path("", pages.landing, name="landing"),
    path("signup/", SignUpView.as_view(), name="signup"),
    path("signup/sent/", auth.signup_sent, name="signup-sent"),
    path("signup/confirm/<str:uidb64>/<str:token>/", auth.ConfirmEmailView.as_view(), name="confirm-email"),
    path("signup/confirm/resend/", auth.resend_confirmation, name="resend-confirmation"),
    path("login/", SignInView.as_view(), name="login"),
    # An email's one-click unsubscribe (docs/suppressions.md): the recipient's, open to whoever holds the link.
    path("unsubscribe/<str:token>/", unsubscribe.UnsubscribeView.as_view(), name="unsubscribe"),
    path("unsubscribe/<str:token>/resubscribe/", unsubscribe.ResubscribeView.as_view(), name="resubscribe"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password-reset/", PasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password-reset/<str:uidb64>/<str:token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path("password-reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("dashboard/", pages.HomeView.as_view(), name="dashboard"),
    path("dashboard/api-key/", pages.ApiKeyView.as_view(), name="api-key"),
    path("dashboard/providers/", providers.ProvidersView.as_view(), name="providers"),
    path("dashboard/domain/", domain.DomainView.as_view(), name="domain"),
    path("dashboard/webhooks/", webhooks.WebhooksView.as_view(), name="webhooks"),
    path("dashboard/jobs/", jobs.JobsView.as_view(), name="jobs"),
    path("dashboard/jobs/<uuid:job_id>/", jobs.JobView.as_view(), name="job"),
    path(
        "dashboard/jobs/<uuid:job_id>/attachments/<int:position>/",
        jobs.JobAttachmentView.as_view(),
        name="job-attachment",
    ),
    path("dashboard/jobs/<uuid:job_id>/retry/", jobs.JobRetryView.as_view(), name="job-retry"),
    path("dashboard/jobs/<uuid:job_id>/cancel/", jobs.JobCancelView.as_view(), name="job-cancel"),
    path("dashboard/suppressions/", suppressions.SuppressionsView.as_view(), name="suppressions"),
    path("dashboard/suppressions/remove/", suppressions.SuppressionRemoveView.as_view(), name="suppression-remove"),
    path("dashboard/events/", events.EventsView.as_view(), name="events"),
    path("dashboard/events/test/", events.EventEndpointTestView.as_view(), name="event-endpoint-test"),
    path("dashboard/events/delete/", events.EventEndpointDeleteView.as_view(), name="event-endpoint-delete"),
    path("dashboard/endpoints/", endpoints.EndpointsView.as_view(), name="endpoints"),
    path("dashboard/templates/", templates.TemplatesView.as_view(), name="templates"),
    path("dashboard/templates/new/", templates.TemplateCreateView.as_view(), name="template-new"),
    path("dashboard/templates/<uuid:template_id>/", templates.TemplateEditView.as_view(), name="template"),
    path(
        "dashboard/templates/<uuid:template_id>/versions/",
        templates.TemplateVersionsView.as_view(),
        name="template-versions",
    ),
    path(
        "dashboard/templates/<uuid:template_id>/versions/<int:number>/",
        templates.TemplateVersionView.as_view(),
        name="template-version",
    ),
    path(
        "dashboard/templates/<uuid:template_id>/preview/",
        templates.TemplatePreviewView.as_view(),
        name="template-preview",
    ),
    path(
        "dashboard/templates/<uuid:template_id>/preview/<slug:token>/",
        templates.TemplatePreviewFrameView.as_view(),
        name="template-preview-frame",
    ),
    path(
        "dashboard/templates/<uuid:template_id>/delete/", templates.TemplateDeleteView.as_view(), name="template-delete"
    ),
    path("dashboard/apps/", apps.AppsView.as_view(), name="apps"),
    path("dashboard/apps/<uuid:app_id>/edit/", apps.AppEditView.as_view(), name="app-edit"),
    path("dashboard/apps/<uuid:app_id>/delete/", apps.AppDeleteView.as_view(), name="app-delete"),
    path("dashboard/apps/<uuid:app_id>/portal-link/", apps.AppPortalLinkView.as_view(), name="app-portal-link"),
    path("dashboard/apps/<uuid:app_id>/portal-revoke/", apps.AppPortalRevokeView.as_view(), name="app-portal-revoke"),
    # One app's pages below its own (dashboard/views/app_pages.py): their templates name them from the app's URL.
    *app_pages("dashboard/apps/<uuid:app_id>/", apps, name="app"),
    # The consumer portal (docs/customer-webhooks.md, "Consumer portal"): one app's pages again, for its customer,
    # below /portal/, which the session cookie names; the link that opens it is the one path with a token.
    *app_pages("portal/", portal, name="portal"),
    path("portal/<str:token>/", portal.PortalOpenView.as_view(), name="portal-open"),
    path("dashboard/audit/", audit.AuditView.as_view(), name="audit"),
    path("dashboard/account/", pages.AccountView.as_view(), name="account"),
    path("dashboard/account/password/", auth.PasswordChangeView.as_view(), name="password_change"),
    path("dashboard/account/delete/", pages.AccountDeleteView.as_view(), name="account-delete"),
]
