from __future__ import annotations

from django.urls import path

from customer_webhooks import message_views, views

urlpatterns = [
    path("", views.AppsView.as_view(), name="app-list"),
    path("/<str:app>", views.AppView.as_view(), name="app-detail"),
    path("/<str:app>/endpoints", views.EndpointsView.as_view(), name="endpoint-list"),
    path("/<str:app>/endpoints/<str:endpoint_id>", views.EndpointView.as_view(), name="endpoint-detail"),
    path("/<str:app>/endpoints/<str:endpoint_id>/secret", views.EndpointSecretView.as_view(), name="endpoint-secret"),
    path(
        "/<str:app>/endpoints/<str:endpoint_id>/secret/rotate",
        views.EndpointSecretRotateView.as_view(),
        name="endpoint-secret-rotate",
    ),
    path(
        "/<str:app>/endpoints/<str:endpoint_id>/recover",
        message_views.EndpointRecoverView.as_view(),
        name="app-endpoint-recover",
    ),
    path("/<str:app>/portal", views.PortalLinkView.as_view(), name="app-portal"),
    path("/<str:app>/portal/revoke", views.PortalRevokeView.as_view(), name="app-portal-revoke"),
    path("/<str:app>/messages", message_views.MessagesView.as_view(), name="app-message-list"),
    path("/<str:app>/messages/<str:message_id>", message_views.MessageView.as_view(), name="app-message-detail"),
]
