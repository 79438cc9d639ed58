"""The Celery app: Redis broker in full mode, a file broker in embedded mode."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notifyhub.settings")

app = Celery("notifyhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
