from __future__ import annotations

from django.urls import path

from suppressions import views

urlpatterns = [
    path("", views.SuppressionsView.as_view(), name="suppression-list"),
    path("/<str:email>", views.SuppressionView.as_view(), name="suppression-detail"),
]
