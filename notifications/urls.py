from __future__ import annotations

from django.urls import path

from notifications import views

urlpatterns = [
    path("email", views.SendEmailView.as_view(), name="send-email"),
    path("webhook", views.SendWebhookView.as_view(), name="send-webhook"),
    path("jobs", views.JobListView.as_view(), name="job-list"),
    path("jobs/<str:job_id>", views.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<str:job_id>/retry", views.JobRetryView.as_view(), name="job-retry"),
]
