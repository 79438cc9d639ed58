"""The delivery floor: a bare Celery task doing only a delivery's essential work, in raw SQL.

Per task: claim the job with one conditional UPDATE that returns its payload, POST the signed webhook, then record
the attempt: one statement that completes the job (only while the claim's lease is still its) and inserts its
delivery log row. Each statement is its own transaction. No Django, no retry or routing logic, no lease renewal, no
day tally, no metrics.

It shares with the app's worker everything that is not the app: the database and its pooler setting, the Redis broker
and its transport options, the ``celery worker`` command line, the receiver and CA bundle, the body bytes, headers
and signature. Configured from the environment: DATABASE_URL, DATABASE_POOLER, REDIS_URL, BENCH_FLOOR_CA_BUNDLE,
BENCH_FLOOR_SECRET and BENCH_FLOOR_POOL_SIZE (connections kept per host: one per thread, so none is thrown away).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

import psycopg
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
# As the app's settings: psycopg's default preparing, or nothing prepared behind PgBouncer in transaction pooling.
PREPARE_THRESHOLD = None if os.environ.get("DATABASE_POOLER") == "pgbouncer" else 5
LEASE = "15 seconds"  # the app's JOB_LEASE_SECONDS default

CLAIM = f"""
    UPDATE notifications_job
    SET status = 'processing', started_at = COALESCE(started_at, now()), locked_until = now() + interval '{LEASE}',
        requeue_at = now() + interval '{LEASE}', claims = claims + 1
    WHERE id = %s AND status = 'pending'
    RETURNING payload, locked_until
"""
RECORD = """
    WITH done AS (
        UPDATE notifications_job
        SET status = 'completed', attempts = attempts + 1, completed_at = now(), finished_at = now(),
            locked_until = NULL, requeue_at = NULL
        WHERE id = %s AND status = 'processing' AND locked_until = %s
        RETURNING id
    )
    INSERT INTO notifications_deliverylog
        (id, job_id, attempt, status, response_status, duration_ms, response_excerpt, created_at)
    SELECT %s, id, 1, 'success', %s, %s, %s, now() FROM done
"""
EXCERPT_BYTES = 1024  # what the app keeps of a response body
connections = threading.local()  # one database connection per worker thread, kept


def _database() -> psycopg.Connection[tuple[object, ...]]:
    if getattr(connections, "database", None) is None:
        connections.database = psycopg.connect(
            os.environ["DATABASE_URL"], autocommit=True, prepare_threshold=PREPARE_THRESHOLD
        )
    return connections.database  # type: ignore[no-any-return]


@app.task(name=FLOOR_TASK)
def deliver_floor(job_id: str) -> None:
    database = _database()
    claimed = database.execute(CLAIM, [job_id]).fetchone()
    if claimed is None:
        return  # another worker holds it, or it is done
    payload_text, lease = claimed
    status, excerpt, duration_ms = _post(job_id, json.loads(str(payload_text)))
    database.execute(RECORD, [job_id, lease, uuid.uuid4(), status, duration_ms, excerpt])


def _post(job_id: str, job: dict[str, object]) -> tuple[int, str, int]:
    """POSTs the job's payload, signed, to its URL: the response's status, the start of its body, and milliseconds."""
    body = json_bytes(job["payload"])
    now = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "NotifyHub/1.0",
        "X-Webhook-Id": job_id,
        "X-Webhook-Attempt": "1",
        "X-Webhook-Timestamp": str(now),
        "X-Webhook-Signature": signature_header(SECRET, now, body),
    }
    started = time.monotonic()
    response = SESSION.post(str(job["url"]), data=body, headers=headers, timeout=30, stream=True)
    try:
        # Read to the end, as the app does, to reuse the connection.
        content = response.raw.read(64 * 1024, decode_content=True)
    finally:
        response.close()
    elapsed_ms = round((time.monotonic() - started) * 1000)
    return response.status_code, content[:EXCERPT_BYTES].decode(errors="replace"), elapsed_ms
