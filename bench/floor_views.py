"""The floor: the accept path's essential work with raw SQL and nothing else.

Per request: find the key by its SHA-256 digest, take one unit of quota with a conditional
UPDATE and insert the job in one transaction, then push one message to Redis. No DRF, no
validation, no rate limiter, no idempotency pre-check (the unique index still applies). The
app's accept path does the same work plus everything a real API needs; bench/accept.py
compares the two.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounts.billing import billing_period
from accounts.keys import api_key_digest
from accounts.plans import limits_for

# The floor's own list: no worker reads it, bench/accept.py flushes it with the rest of the bench's Redis DB.
FLOOR_QUEUE = "bench:floor:jobs"

ACCOUNT_BY_DIGEST = """
    SELECT a.id, a.plan, a.plan_started_on
    FROM accounts_apikey k JOIN accounts_account a ON a.id = k.account_id
    WHERE k.digest = %s AND k.revoked_at IS NULL AND a.is_active AND a.deleted_at IS NULL
"""
TAKE_QUOTA_UNIT = """
    UPDATE accounts_usageperiod SET used = used + 1
    WHERE account_id = %s AND period_start = %s AND used < %s
"""
# The row the app writes for a webhook job, requeue_at included: the sweeper's partial index is upkeep every
# accepted job pays.
INSERT_JOB = """
    INSERT INTO notifications_job
        (id, account_id, type, status, priority, payload, idempotency_key, attempts, max_attempts, claims,
         created_at, requeue_at)
    VALUES (%s, %s, 'webhook', 'pending', 5, %s, %s, 0, 3, 0, %s, %s)
"""


@cache
def _redis() -> redis.Redis:
    # One pooled, thread-safe client per worker process. The floor only runs with Redis configured.
    assert settings.REDIS_URL, "the floor needs REDIS_URL"
    return redis.Redis.from_url(settings.REDIS_URL)


def _json_response(status: int, data: dict[str, Any]) -> HttpResponse:
    return HttpResponse(json.dumps(data), status=status, content_type="application/json")


def _account_row(raw_key: str) -> tuple[int, str, Any] | None:
    with connection.cursor() as cursor:
        cursor.execute(ACCOUNT_BY_DIGEST, [api_key_digest(raw_key)])
        return cursor.fetchone()


def _store_job(*, account_id: int, plan: str, plan_started_on: Any, job_id: uuid.UUID, body: dict[str, Any]) -> bool:
    """Takes a quota unit and inserts the job in one transaction; False when the quota is spent."""
    period_start, _ = billing_period(anchor=plan_started_on, today=timezone.now().date())
    payload = {"url": body["url"], "method": "POST", "headers": {}, "payload": body["payload"]}
    created_at: datetime = timezone.now()
    requeue_at = created_at + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(TAKE_QUOTA_UNIT, [account_id, period_start, limits_for(plan).monthly_quota])
        if cursor.rowcount != 1:
            return False
        cursor.execute(
            INSERT_JOB,
            [job_id, account_id, json.dumps(payload), body.get("idempotencyKey"), created_at, requeue_at],
        )
    return True


def accept_webhook(request: HttpRequest) -> HttpResponse:
    row = _account_row(request.META.get("HTTP_X_API_KEY", ""))
    if row is None:
        return _json_response(401, {"error": "Invalid API key"})
    account_id, plan, plan_started_on = row
    job_id = uuid.uuid4()
    body = json.loads(request.body)
    if not _store_job(account_id=account_id, plan=plan, plan_started_on=plan_started_on, job_id=job_id, body=body):
        return _json_response(403, {"error": "Monthly usage limit exceeded"})
    _redis().lpush(FLOOR_QUEUE, json.dumps({"jobId": str(job_id)}))
    return _json_response(202, {"jobId": str(job_id), "status": "pending"})
