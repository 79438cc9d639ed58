"""The domain page (being built)."""

from __future__ import annotations

from django.views.generic import TemplateView

from dashboard.views.base import HolderView


class DomainView(HolderView, TemplateView):
    template_name = "dashboard/domain.html"
