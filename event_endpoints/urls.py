from __future__ import annotations

from django.urls import path

from event_endpoints import views

urlpatterns = [
    path("", views.EventEndpointsView.as_view(), name="event-endpoint-list"),
    path("/<str:endpoint_id>", views.EventEndpointView.as_view(), name="event-endpoint-detail"),
    path("/<str:endpoint_id>/deliveries", views.EventDeliveriesView.as_view(), name="event-endpoint-deliveries"),
]
