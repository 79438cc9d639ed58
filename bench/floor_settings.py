"""Settings for the floor server: the app's own settings, with no middleware and one URL.

Same database, Redis, logging and connection handling as the app, so the only difference the
benchmark sees is the work the floor view leaves out.
"""

from __future__ import annotations

from notifyhub.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_urls"
# Middleware is framework work, not accept-path work: the floor goes without it.
MIDDLEWARE = []
API_KEY_MIDDLEWARE: list[str] = []
