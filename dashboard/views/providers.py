"""The providers page (being built)."""

from __future__ import annotations

from django.views.generic import TemplateView

from dashboard.views.base import HolderView


class ProvidersView(HolderView, TemplateView):
    template_name = "dashboard/providers.html"
