"""What the notifications app tells operators: its Prometheus metrics and a log line per delivery attempt.

Every metric is named, labelled and explained in docs/observability.md. The counters and the
histogram live in each process (summed over processes by ``core.metrics``); the queue's gauges
are read from the database when a scrape asks, so every process reports the same queue.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime

from django.db import DatabaseError
from django.utils import timezone
from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

from core.logs import url_origin
from notifications.delivery.outcome import AttemptOutcome
from notifications.models import DeliveryStatus, Job, JobStatus, JobType
from notifications.selectors import queue_state

logger = logging.getLogger("notifyhub.delivery")

_accepted = Counter("notifyhub_jobs_accepted", "Jobs accepted by the send endpoints.", ["type"])
_delivered = Counter("notifyhub_jobs_delivered", "Jobs delivered: an attempt succeeded, the job completed.", ["type"])
_failed = Counter("notifyhub_jobs_failed", "Jobs failed for good: no attempt left, or a final failure.", ["type"])
_attempt_seconds = Histogram(
    "notifyhub_delivery_attempt_duration_seconds",
    "Time one delivery attempt took in the worker: a webhook request, or an email through its providers.",
    ["type", "outcome"],
    # From a fast local endpoint to the webhook and provider timeouts (30 s, up to three providers).
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)

# The labelled series made up front: each exists, at 0, from a process's start (a rate needs a first
# sample), and counting skips the label lookup on the accept and delivery paths.
ACCEPTED = {job_type: _accepted.labels(job_type) for job_type in JobType.values}
DELIVERED = {job_type: _delivered.labels(job_type) for job_type in JobType.values}
FAILED = {job_type: _failed.labels(job_type) for job_type in JobType.values}
ATTEMPT_SECONDS = {
    (job_type, outcome): _attempt_seconds.labels(job_type, outcome)
    for job_type in JobType.values
    for outcome in DeliveryStatus.values
}


def job_accepted(job_type: str) -> None:
    ACCEPTED[job_type].inc()


def job_failed_on_arrival(job: Job) -> None:
    """Counts a job accepted already failed, never to be attempted (its recipient is suppressed)."""
    ACCEPTED[job.type].inc()
    FAILED[job.type].inc()
    logger.info("Job %s: failed on arrival: %s", job.id, job.error_message)


def attempt_recorded(job: Job, *, attempt: int, outcome: AttemptOutcome, job_status: str, seconds: float) -> None:
    """Counts a recorded attempt and logs it; ``job_status`` is the job's status after it."""
    result = DeliveryStatus.SUCCESS if outcome.delivered else DeliveryStatus.FAILED
    ATTEMPT_SECONDS[job.type, result].observe(seconds)
    if job_status == JobStatus.COMPLETED:
        DELIVERED[job.type].inc()
    elif job_status == JobStatus.FAILED:
        FAILED[job.type].inc()
    if logger.isEnabledFor(logging.INFO):
        _log_attempt(job, attempt=attempt, outcome=outcome, result=result, job_status=job_status, seconds=seconds)


def _log_attempt(
    job: Job, *, attempt: int, outcome: AttemptOutcome, result: str, job_status: str, seconds: float
) -> None:
    duration_ms = round(seconds * 1000, 1)
    fields = {
        "job_id": str(job.id),
        "account_id": job.account_id,
        "type": job.type,
        "attempt": attempt,
        "outcome": result,
        "job_status": job_status,
        "status_code": outcome.response_status,
        "duration_ms": duration_ms,
        "provider": outcome.used_provider,
        "url": url_origin(job.payload["url"]) if job.type == JobType.WEBHOOK else None,
        "error": outcome.error_message,
    }
    logger.info("%s job %s attempt %s: %s in %.1fms", job.type, job.id, attempt, result, duration_ms, extra=fields)


class QueueCollector:
    """``notifyhub_jobs_pending`` and ``notifyhub_oldest_pending_job_age_seconds``, read at scrape time."""

    def collect(self) -> Iterator[Metric]:
        try:
            state = queue_state()
        except DatabaseError as error:
            # The rest of the scrape stands; the missing series show the database is down, as /api/v1/health does.
            logger.warning("Metrics: the queue could not be read: %s", error)
            return
        yield GaugeMetricFamily("notifyhub_jobs_pending", "Jobs waiting for a worker (status pending).", state.pending)
        yield GaugeMetricFamily(
            "notifyhub_oldest_pending_job_age_seconds",
            "Seconds since the oldest pending job never tried yet was accepted; 0 when there is none.",
            _age_seconds(state.oldest_untried_at),
        )


def _age_seconds(since: datetime | None) -> float:
    return max((timezone.now() - since).total_seconds(), 0.0) if since else 0.0
