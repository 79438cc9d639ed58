from __future__ import annotations

from django.urls import path

from email_templates import views

urlpatterns = [
    path("", views.TemplatesView.as_view(), name="template-list"),
    path("/<str:template>", views.TemplateView.as_view(), name="template-detail"),
    path("/<str:template>/versions", views.TemplateVersionsView.as_view(), name="template-versions"),
    path("/<str:template>/render", views.TemplateRenderView.as_view(), name="template-render"),
]
