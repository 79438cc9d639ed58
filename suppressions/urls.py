from __future__ import annotations

from django.urls import path

from suppressions import views

urlpatterns = [
    path("", views.SuppressionsView.as_view(), name="suppression-list"),
    # The rest of the path whole: an address may hold a `/`, which arrives decoded from a client's `%2F`.
    path("/<path:email>", views.SuppressionView.as_view(), name="suppression-detail"),
]
