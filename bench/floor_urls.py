"""The floor server's only route, at the app's path so one wrk script drives both."""

from __future__ import annotations

from django.urls import path

from bench.floor_views import accept_webhook

urlpatterns = [path("api/v1/notifications/webhook", accept_webhook)]
