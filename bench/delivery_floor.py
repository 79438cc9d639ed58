"""The delivery floor for bench/delivery.py: a bare Celery task that POSTs a signed webhook, and nothing else.

It shares everything with the app's worker that is not the app: the same Redis broker and transport options
(priority queues, late acks, prefetch 1), the same ``celery worker`` command line, the same receiver and CA bundle,
the same body bytes, headers and signature. It has no database, no Django, no job row: what the app's worker
spends beyond this task is what its own code costs.

Configured from the environment by bench/delivery.py:
  REDIS_URL                the broker (the bench's own Redis DB)
  BENCH_FLOOR_CA_BUNDLE    the CA file to verify the receiver with (the same combined bundle the app builds)
  BENCH_FLOOR_SECRET       the signing secret
  BENCH_FLOOR_POOL_SIZE    connections kept per host: one per thread, so no pooled connection is thrown away

Run: celery --app bench.delivery_floor worker --pool threads --concurrency 8
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import requests
from celery import Celery
from requests.adapters import HTTPAdapter

from notifyhub.signing import signature_header

FLOOR_TASK = "bench.deliver_floor"
FLOOR_QUEUE = "bench-floor"
USER_AGENT = "NotifyHub/1.0"
TIMEOUT_SECONDS = 30
DRAIN_BYTES = 64 * 1024

# fixups=[]: without it Celery sees DJANGO_SETTINGS_MODULE (set by notifyhub's own import) and would set Django up,
# closing database connections around every task. The floor has no database.
app = Celery("notifyhub_bench_floor", fixups=[])
app.conf.update(
    broker_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"),
    # The app's settings, so broker work per task is the same on both sides.
    broker_transport_options={"queue_order_strategy": "priority", "priority_steps": [0, 5, 9]},
    task_default_queue=FLOOR_QUEUE,
    task_ignore_result=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # as the app: REQUESTS_CA_BUNDLE in the environment would replace `verify`
    session.verify = os.environ.get("BENCH_FLOOR_CA_BUNDLE", True)
    pool_size = int(os.environ.get("BENCH_FLOOR_POOL_SIZE", "10"))
    session.mount("https://", HTTPAdapter(pool_connections=1, pool_maxsize=pool_size))
    return session


SESSION = _session()
SECRET = os.environ.get("BENCH_FLOOR_SECRET", "")


def body_bytes(payload: dict[str, Any]) -> bytes:
    """The app's body serialisation (notifyhub.api.fields.json_bytes), without importing Django."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


@app.task(name=FLOOR_TASK)
def deliver_floor(delivery_id: str, url: str, payload: dict[str, Any]) -> None:
    body = body_bytes(payload)
    now = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Webhook-Id": delivery_id,
        "X-Webhook-Attempt": "1",
        "X-Webhook-Timestamp": str(now),
        "X-Webhook-Signature": signature_header(SECRET, now, body),
    }
    response = SESSION.post(url, data=body, headers=headers, timeout=TIMEOUT_SECONDS, stream=True)
    try:
        # Read to the end, as the app does, so the connection goes back to the pool.
        response.raw.read(DRAIN_BYTES, decode_content=True)
    finally:
        response.close()
