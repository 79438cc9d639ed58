"""Gunicorn settings for production and `make run`; each can be overridden from the environment."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

from prometheus_client import multiprocess

bind = os.environ.get("GUNICORN_BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")

if os.environ.get("REDIS_URL"):
    # Production. Sync workers take the next connection only when idle, so requests wait in
    # the kernel's accept queue first come, first served. gthread workers take keep-alive
    # connections greedily (9, 4, 2 and 1 of 16 across 4 workers were seen), so requests
    # queued behind one busy worker: sync workers kept the tail latency lower at the same or
    # better throughput (bench/RESULTS.md). Sync workers want a proxy in front that buffers slow clients
    # (nginx, or a load balancer), as gunicorn's documentation says.
    worker_class = "sync"
    workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2))
    # A sync worker is killed when one request outlasts this. The longest is a sender-domain
    # request or check waiting on all three providers' timeouts (PROVIDER_TIMEOUT_SECONDS, 30).
    timeout = int(os.environ.get("WEB_TIMEOUT", "120"))
else:
    # Embedded mode keeps the rate limiter and cache in-process, so it must be one process;
    # its threads serve the dashboard and the API side by side.
    worker_class = "gthread"
    workers = 1
    threads = int(os.environ.get("WEB_THREADS", "4"))
    timeout = 30
keepalive = 5
# The longest request line (method, path and query) gunicorn reads, its maximum: a query the OpenAPI document allows,
# every value at its declared length and percent-encoded, fits, so the app answers it in the envelope. A longer line
# is answered 414 by gunicorn itself (docs/rules.md, "Limits"); tests/api/test_query_parameters.py holds the two.
limit_request_line = 8190
# gunicorn caps no request body: the API's parser does, reading no further than the operation allows
# (API_MAX_BODY_BYTES; an email send's API_MAX_EMAIL_BODY_BYTES, 15 MiB, docs/rules.md "Attachments").
# Off unless asked for ("-" is stdout): the app logs every request itself, with its duration, account and
# request id, in LOG_FORMAT (docs/observability.md), so gunicorn's line would say the same thing twice.
_access_log = os.environ.get("GUNICORN_ACCESS_LOG", "off").strip()
accesslog = None if _access_log.lower() in ("", "off") else _access_log

# gunicorn's control socket (for gunicornc) in this checkout's var/, the settings' VAR_DIR (notifyhub/settings.py):
# gunicorn's default, $XDG_RUNTIME_DIR/gunicorn.ctl or ~/.gunicorn/gunicorn.ctl, is one path for every checkout
# and service of the user on the machine.
_var_dir = os.environ.get("NOTIFYHUB_VAR_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "var"))
control_socket = os.path.join(_var_dir, "gunicorn.ctl")


def child_exit(server: Any, worker: Any) -> None:
    """What prometheus_client's multiprocess mode asks of gunicorn: a dead worker's live gauges leave the sum
    /metrics shows, while its counters and histograms stay in it (docs/observability.md)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)
