from __future__ import annotations

from django.urls import path

from notifications.views import jobs, sends

urlpatterns = [
    path("email", sends.SendEmailView.as_view(), name="send-email"),
    path("webhook", sends.SendWebhookView.as_view(), name="send-webhook"),
    path("email/batch", sends.SendEmailBatchView.as_view(), name="send-email-batch"),
    path("webhook/batch", sends.SendWebhookBatchView.as_view(), name="send-webhook-batch"),
    # The account holder's mount of the same four views is in notifyhub/urls.py, under /api/v1/user/.
    path("jobs", jobs.JobListView.as_view(mount=jobs.API_CLIENT), name="job-list"),
    path("jobs/<str:job_id>", jobs.JobDetailView.as_view(mount=jobs.API_CLIENT), name="job-detail"),
    path("jobs/<str:job_id>/retry", jobs.JobRetryView.as_view(mount=jobs.API_CLIENT), name="job-retry"),
    path("jobs/<str:job_id>/cancel", jobs.JobCancelView.as_view(mount=jobs.API_CLIENT), name="job-cancel"),
]
