from __future__ import annotations

from django.urls import path

from notifications import views

urlpatterns = [
    path("email", views.SendEmailView.as_view(), name="send-email"),
    path("webhook", views.SendWebhookView.as_view(), name="send-webhook"),
    path("email/batch", views.SendEmailBatchView.as_view(), name="send-email-batch"),
    path("webhook/batch", views.SendWebhookBatchView.as_view(), name="send-webhook-batch"),
    # The account holder's mount of the same four views is in notifyhub/urls.py, under /api/v1/user/.
    path("jobs", views.JobListView.as_view(mount=views.API_CLIENT), name="job-list"),
    path("jobs/<str:job_id>", views.JobDetailView.as_view(mount=views.API_CLIENT), name="job-detail"),
    path("jobs/<str:job_id>/retry", views.JobRetryView.as_view(mount=views.API_CLIENT), name="job-retry"),
    path("jobs/<str:job_id>/cancel", views.JobCancelView.as_view(mount=views.API_CLIENT), name="job-cancel"),
]
