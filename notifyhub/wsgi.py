from __future__ import annotations

import os

import django

from core.handlers import NotifyHubWSGIApplication
from core.tracing import tracing_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notifyhub.settings")
# What django.core.wsgi.get_wsgi_application does before it builds its handler.
django.setup(set_prefix=False)
# Before the handlers build their middleware chains, which the Django instrumentation joins; in the gunicorn worker,
# after the fork (the application is loaded there), so the span exporter's thread is the worker's own.
tracing_start()
application = NotifyHubWSGIApplication()
