from __future__ import annotations

from django.urls import path

from domains import views

urlpatterns = [
    path("request", views.DomainRequestView.as_view(), name="domain-request"),
    path("verify", views.DomainVerifyView.as_view(), name="domain-verify"),
    path("status", views.DomainStatusView.as_view(), name="domain-status"),
]
