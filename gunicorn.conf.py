"""Gunicorn settings for production and `make run`; each can be overridden from the environment."""

from __future__ import annotations

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
# Embedded mode keeps the rate limiter and cache in-process, so it must be one process.
_embedded = not os.environ.get("REDIS_URL")
workers = 1 if _embedded else int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2))
# Measured with `make bench` on 2 cores (bench/README.md): 2x8, 4x2, 8x2 and 16x1 workers x threads, and sync
# workers, served the accept path no faster than 2 per core x 4 threads, so these stay the defaults.
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = 30
keepalive = 5
# "-" logs each request to stdout; an empty value or "off" turns the access log off (a proxy in front
# logs requests already, and `make bench` measures the app, not log writing).
_access_log = os.environ.get("GUNICORN_ACCESS_LOG", "-").strip()
accesslog = None if _access_log.lower() in ("", "off") else _access_log
