from __future__ import annotations

from django.urls import path

from webhooks_inbound.selectors import RECEIVER_SLUGS
from webhooks_inbound.views import RECEIVERS

urlpatterns = [
    path(f"{slug}/<str:customer_id>", RECEIVERS[provider].as_view(), name=f"{slug}-events")
    for provider, slug in RECEIVER_SLUGS.items()
]
