"""The delivery floor: a bare Celery task that POSTs a signed webhook, and nothing else.

It shares with the app's worker everything that is not the app: the Redis broker and its transport options, the
``celery worker`` command line, the receiver and CA bundle, the body bytes, headers and signature. No Django, no
database, no job row. Configured from the environment: REDIS_URL, BENCH_FLOOR_CA_BUNDLE, BENCH_FLOOR_SECRET and
BENCH_FLOOR_POOL_SIZE (connections kept per host: one per thread, so none is thrown away).
"""

from __future__ import annotations

import os
import time
from typing import Any

import requests
from celery import Celery
from requests.adapters import HTTPAdapter

from core.signing import signature_header
from notifications.delivery.wire import json_bytes

FLOOR_TASK = "bench.deliver_floor"

# fixups=[]: Celery would otherwise set Django up (DJANGO_SETTINGS_MODULE may be set) and close database
# connections around every task.
app = Celery("notifyhub_bench_floor", fixups=[])
app.conf.update(
    broker_url=os.environ.get("REDIS_URL"),
    # The app's broker settings, so broker work per task is the same on both sides.
    broker_transport_options={"queue_order_strategy": "priority", "priority_steps": [0, 5, 9]},
    task_default_queue="bench-floor",
    task_ignore_result=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)

SESSION = requests.Session()
SESSION.trust_env = False  # as the app: REQUESTS_CA_BUNDLE in the environment would replace `verify`
SESSION.verify = os.environ.get("BENCH_FLOOR_CA_BUNDLE", True)
SESSION.mount(
    "https://", HTTPAdapter(pool_connections=1, pool_maxsize=int(os.environ.get("BENCH_FLOOR_POOL_SIZE", 10)))
)
SECRET = os.environ.get("BENCH_FLOOR_SECRET", "")


@app.task(name=FLOOR_TASK)
def deliver_floor(delivery_id: str, url: str, payload: dict[str, Any]) -> None:
    body = json_bytes(payload)
    now = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "NotifyHub/1.0",
        "X-Webhook-Id": delivery_id,
        "X-Webhook-Attempt": "1",
        "X-Webhook-Timestamp": str(now),
        "X-Webhook-Signature": signature_header(SECRET, now, body),
    }
    response = SESSION.post(url, data=body, headers=headers, timeout=30, stream=True)
    try:
        response.raw.read(64 * 1024, decode_content=True)  # read to the end, as the app does, to reuse the connection
    finally:
        response.close()
