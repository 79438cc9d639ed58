from __future__ import annotations

from django.urls import path

from customer_webhooks import message_views

urlpatterns = [
    path("/<str:app>/messages", message_views.MessagesView.as_view(), name="app-message-list"),
    path("/<str:app>/messages/<str:message_id>", message_views.MessageView.as_view(), name="app-message-detail"),
    path(
        "/<str:app>/endpoints/<str:endpoint_id>/recover",
        message_views.EndpointRecoverView.as_view(),
        name="app-endpoint-recover",
    ),
]
