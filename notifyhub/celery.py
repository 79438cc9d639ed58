"""The Celery app: Redis broker in full mode, a file broker in embedded mode."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notifyhub.settings")

app = Celery("notifyhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def recycle_stale_connections(**kwargs: Any) -> None:
    """What Django does around each request: drop connections past CONN_MAX_AGE or broken."""
    close_old_connections()
