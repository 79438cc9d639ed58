from __future__ import annotations

import os

import django

from core.handlers import NotifyHubWSGIApplication

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notifyhub.settings")
# What django.core.wsgi.get_wsgi_application does before it builds its handler.
django.setup(set_prefix=False)
application = NotifyHubWSGIApplication()
