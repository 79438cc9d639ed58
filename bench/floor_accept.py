"""The accept floor: settings, URL and view of a server doing only the accept path's essential work, in raw SQL.

Used as DJANGO_SETTINGS_MODULE: the app's own settings (database, Redis, logging, connection handling), no middleware
and one URL, the app's path, so one wrk script drives both servers. Per request: find the key by its SHA-256 digest,
record the request in the key's rolling one-minute window with one Redis script, take one unit of quota with a
conditional UPDATE and insert the job in one transaction, push one message to Redis. No DRF, no validation, no
fallback when Redis fails, no idempotency pre-check (the unique index still applies).
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils import timezone

from accounts.billing import billing_period
from accounts.keys import api_key_digest
from accounts.plans import limits_for
from notifyhub.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_accept"
MIDDLEWARE: list[str] = []
API_KEY_MIDDLEWARE: list[str] = []

# No worker reads this list; the bench flushes it with the rest of its Redis DB.
FLOOR_QUEUE = "bench:floor:jobs"
ACCOUNT_BY_DIGEST = """
    SELECT k.id, a.id, a.plan, a.plan_started_on
    FROM accounts_apikey k JOIN accounts_account a ON a.id = k.account_id
    WHERE k.digest = %s AND k.revoked_at IS NULL AND a.is_active AND a.deleted_at IS NULL
"""
TAKE_QUOTA_UNIT = """
    UPDATE accounts_usageperiod SET used = used + 1 WHERE account_id = %s AND period_start = %s AND used < %s
"""
# The row the app writes, requeue_at included: the sweeper's partial index is upkeep every accepted job pays.
INSERT_JOB = """
    INSERT INTO notifications_job
        (id, account_id, type, status, priority, payload, idempotency_key, attempts, max_attempts, claims,
         created_at, requeue_at)
    VALUES (%s, %s, 'webhook', 'pending', 5, %s, %s, 0, 3, 0, %s, %s)
"""


# The app's moving window (accounts/throttle.py, the `limits` library's) in one script: refused when the key's
# limit-th latest hit is within the minute, else this hit is recorded and the list kept to the limit.
ROLLING_MINUTE = """
local limit = tonumber(ARGV[2])
local oldest_counted = redis.call('LINDEX', KEYS[1], limit - 1)
if oldest_counted and tonumber(oldest_counted) >= tonumber(ARGV[1]) - 60 then return 0 end
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('EXPIRE', KEYS[1], 60)
return 1
"""


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


@cache
def _rolling_minute() -> Any:
    return _redis().register_script(ROLLING_MINUTE)  # run by EVALSHA, loaded on first use


def _within_rate_limit(key_id: int, plan: str) -> bool:
    hit = [time.time(), limits_for(plan).requests_per_minute]
    return bool(_rolling_minute()(keys=[f"bench:floor:rate:{key_id}"], args=hit))


def _reply(status: int, data: dict[str, Any]) -> HttpResponse:
    return HttpResponse(json.dumps(data), status=status, content_type="application/json")


def accept_webhook(request: HttpRequest) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute(ACCOUNT_BY_DIGEST, [api_key_digest(request.META.get("HTTP_X_API_KEY", ""))])
        row = cursor.fetchone()
    if row is None:
        return _reply(401, {"error": "Invalid API key"})
    key_id, account_id, plan, plan_started_on = row
    if not _within_rate_limit(key_id, plan):
        return _reply(429, {"error": "Rate limit exceeded"})
    body = json.loads(request.body)
    job_id = uuid.uuid4()
    period_start, _ = billing_period(anchor=plan_started_on, today=timezone.now().date())
    payload = {"url": body["url"], "method": "POST", "headers": {}, "payload": body["payload"]}
    created_at = timezone.now()
    requeue_at = created_at + timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(TAKE_QUOTA_UNIT, [account_id, period_start, limits_for(plan).monthly_quota])
        if cursor.rowcount != 1:
            return _reply(403, {"error": "Monthly usage limit exceeded"})
        values = [job_id, account_id, json.dumps(payload), body.get("idempotencyKey"), created_at, requeue_at]
        cursor.execute(INSERT_JOB, values)
    _redis().lpush(FLOOR_QUEUE, json.dumps({"jobId": str(job_id)}))
    return _reply(202, {"jobId": str(job_id), "status": "pending"})


urlpatterns = [path("api/v1/notifications/webhook", accept_webhook)]
