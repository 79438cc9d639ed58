"""Handing jobs to the broker. The database stays the source of truth: a lost message is re-sent."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any
from uuid import UUID, uuid4

from celery import current_app as app
from django.conf import settings
from django.utils import timezone
from kombu import Connection, Producer
from kombu.exceptions import OperationalError

from core import tracing
from core.unavailable import DATABASE_FAULTS
from notifications.engine import store
from notifications.models import Job

logger = logging.getLogger(__name__)

DELIVER_TASK = "notifications.deliver_job"
# The dispatcher: beat runs it every JOB_DISPATCH_INTERVAL_SECONDS, and a batch of sends asks for a run at once.
DISPATCH_TASK = "notifications.dispatch_jobs"
# Several new jobs' tasks published by a worker (a message's deliveries): the request publishes this one.
ENQUEUE_TASK = "notifications.enqueue_jobs"
# Job priority (1 high, 5 normal, 10 low) to the Redis transport's steps, where 0 is consumed first.
BROKER_PRIORITY = {1: 0, 5: 5, 10: 9}
# The step consumed last: what must wait for every job (an event's delivery, an alert to a holder).
LAST_STEP = BROKER_PRIORITY[10]

# Each thread keeps one producer on a broker connection of its own (kombu connections are
# not thread-safe); it is dropped after any failure, so the next send starts afresh.
_thread = threading.local()


def job_enqueue(*, job_id: UUID, priority: int, countdown: float | None = None) -> None:
    """Sends the job's task; if the broker is unreachable the job is marked for the sweeper instead.

    The job row is already committed, so the client's 202 stands: failing the request here
    would report a job as not accepted while it will be delivered.
    """
    jobs_enqueue([(job_id, priority)], countdown=countdown)


def jobs_enqueue(jobs: Sequence[tuple[UUID, int]], *, countdown: float | None = None) -> None:
    """`job_enqueue` for many jobs, each ``(id, priority)``, their tasks published one after the other. When the
    broker fails, all are left to the sweeper in one statement, instead of each waiting out the publish's retries in
    turn (a task sent twice finds its job claimed, or finished, and does nothing)."""
    connection, producer = _producer()
    try:
        for job_id, priority in jobs:
            _publish(
                producer,
                task=DELIVER_TASK,
                arguments=(str(job_id),),
                priority=BROKER_PRIORITY[priority],
                countdown=countdown,
            )
    except _broker_failures(connection) as error:
        _drop_producer()
        logger.warning("Broker unreachable; %d job(s) will be re-sent by the sweeper: %s", len(jobs), error)
        _leave_to_the_sweeper([job_id for job_id, _ in jobs], countdown=countdown)


def jobs_enqueue_soon(jobs: Sequence[tuple[UUID, int]]) -> None:
    """`jobs_enqueue` in a worker: one task carrying the jobs (``<id>:<priority>`` each), on the first step, whose
    run publishes their tasks, so the request pays one publish for them all. The broker refusing it leaves the jobs
    to the sweeper, as `jobs_enqueue` does; the task lost once taken, their requeue time, a single send's, brings
    them back."""
    carried = (f"{job_id}:{priority}" for job_id, priority in jobs)
    error = task_publish(ENQUEUE_TASK, *carried, priority=BROKER_PRIORITY[1])
    if error is not None:
        logger.warning("Broker unreachable; %d job(s) will be re-sent by the sweeper: %s", len(jobs), error)
        _leave_to_the_sweeper([job_id for job_id, _ in jobs], countdown=None)


def jobs_carried(arguments: Sequence[str]) -> list[tuple[UUID, int]]:
    """The jobs an ENQUEUE_TASK carries, as `jobs_enqueue_soon` wrote them."""
    return [(UUID(job_id), int(priority)) for job_id, _, priority in (job.partition(":") for job in arguments)]


def dispatch_soon() -> None:
    """Asks a worker to run the dispatcher now, on the first step, for jobs stored due at once (a batch's): it sends
    their tasks, as it sends a scheduled send's. If the broker does not take the ask, beat's next tick does it."""
    error = task_publish(DISPATCH_TASK, priority=BROKER_PRIORITY[1])
    if error is not None:
        logger.warning("Broker unreachable; due jobs wait for the dispatcher's next tick: %s", error)


def dispatched_at(due: datetime) -> datetime:
    """When a job whose wait until ``due`` is not counted down is due for the dispatcher: its lead before, so that a
    tick publishes its task then, counted down to ``due`` (processing's `_publish_due`)."""
    return due - dispatch_lead()


def dispatch_lead() -> timedelta:
    """How long before its time a job left to the dispatcher is due for it: a tick and a second."""
    return timedelta(seconds=settings.JOB_DISPATCH_INTERVAL_SECONDS + 1)


def task_publish(task: str, *arguments: str, priority: int, countdown: float | None = None) -> BaseException | None:
    """Sends ``task`` with its ``arguments`` at the broker's ``priority`` (0 is consumed first); the broker's error
    when it did not take it, for the caller to say what becomes of the task, else None."""
    connection, producer = _producer()
    try:
        _publish(producer, task=task, arguments=arguments, priority=priority, countdown=countdown)
    except _broker_failures(connection) as error:
        _drop_producer()
        return error
    return None


# Off the framework's road: docs/departures.md, "coalesced-announcing".
class CoalescedTask:
    """A task without arguments that many calls in this process ask for, published once for all the calls of
    ``interval`` seconds, by a thread of its own: a caller pays for setting a flag, not for a publish.

    Every call is followed by a publish that starts after it: the thread clears the flag before it publishes, so a
    call it did not see sets it again. The task's run sees what a caller committed before asking. A call made just
    before the process dies can go unanswered: what the task was to do must be found by a sweeper too.
    """

    def __init__(self, task: str, *, priority: int, interval: float) -> None:
        self.task = task
        self._priority = priority
        self._interval = interval
        self._wanted = threading.Event()
        self._guard = threading.Lock()
        self._thread_pid: int | None = None  # the process the thread runs in: a forked child starts its own

    def ask(self) -> None:
        self._wanted.set()
        with self._guard:
            if self._thread_pid != os.getpid():
                self._thread_pid = os.getpid()
                threading.Thread(target=self._publish_forever, name=f"publish {self.task}", daemon=True).start()

    def _publish_forever(self) -> None:
        while True:
            self._wanted.wait()
            time.sleep(self._interval)  # the calls of the next moment share this publish
            self._wanted.clear()
            error = task_publish(self.task, priority=self._priority)
            if error is not None:
                logger.warning("Broker unreachable; %s is left to the sweeper: %s", self.task, error)


def _leave_to_the_sweeper(job_ids: list[UUID], *, countdown: float | None) -> None:
    """Brings the jobs' requeue time forward to when their task was due, so the sweeper's first tick once the
    broker answers publishes them (docs/delivery-engine.md, "The sweeper")."""
    publish_at = timezone.now() + timedelta(seconds=countdown or 0)
    try:
        store.mark_unpublished(Job.objects.filter(id__in=job_ids), publish_at=publish_at)
    except DATABASE_FAULTS as error:
        # The requeue time the jobs already have still brings them back, later.
        logger.warning("Could not mark %d job(s) for the sweeper: %s", len(job_ids), error)


def queued_deliveries() -> list[tuple[list[int], int]] | None:
    """The tasks waiting in each of the broker's lists, with the job priorities whose tasks that list holds; None if
    the broker cannot be asked. A list hands its tasks out in the order they came; the first step's also holds the
    tasks that deliver no job (the dispatcher's, the sweeper's)."""
    connection, _ = _producer()
    queue, _ = _publish_settings()
    try:
        channel: Any = connection.default_channel  # core.broker's channel; the stubs know only StdChannel
        waiting = channel.waiting_by_step(queue)
    except _broker_failures(connection):
        _drop_producer()
        return None
    priorities_at: dict[int, list[int]] = {}
    for priority, step in BROKER_PRIORITY.items():
        priorities_at.setdefault(channel.priority(step), []).append(priority)
    return [(priorities, waiting[step]) for step, priorities in priorities_at.items()]


# Off the framework's road: docs/departures.md, "kept-producer".
def _publish(
    producer: Producer, *, task: str, arguments: tuple[str, ...], priority: int, countdown: float | None
) -> None:
    """Publishes a Celery task message (protocol 2, built by Celery) to the default queue.

    What `app.send_task` does for this one task, without its per-call work: a producer taken
    from the pool and given back, routing, queue declaration and configuration lookups
    (docs/departures.md). The message is Celery's own, built by ``app.amqp``, so any worker reads it.
    """
    task_id = str(uuid4())
    message = app.amqp.as_task_v2(
        task_id, task, args=arguments, countdown=countdown, argsrepr=repr(arguments), kwargsrepr="{}"
    )
    queue, retry_policy = _publish_settings()
    # The trace context goes where Celery's own publish would have its instrumentation put it: the worker's task span
    # continues the trace of the request (or task) that sent it (docs/departures.md, "kept-producer"). The publish's
    # Redis commands make no span (docs/observability.md, "Spans").
    with tracing.task_publishing(message.headers):
        producer.publish(
            message.body,
            exchange="",
            routing_key=queue,
            headers=message.headers,
            priority=priority,
            serializer="json",
            retry=True,
            retry_policy=retry_policy,
            **message.properties,
        )


@cache
def _publish_settings() -> tuple[str, dict[str, Any]]:
    """The queue and the retry policy, read once: neither changes while the process runs."""
    return app.conf.task_default_queue, app.conf.task_publish_retry_policy


def _broker_failures(connection: Connection) -> tuple[type[BaseException], ...]:
    """Kombu's, the socket's, and the transport's own (redis-py's, say) once retries are spent."""
    return (OperationalError, OSError, *connection.connection_errors)


def _producer() -> tuple[Connection, Producer]:
    held: tuple[Connection, Producer] | None = getattr(_thread, "producer", None)
    if held is None:
        connection = app.connection_for_write()
        held = _thread.producer = (connection, Producer(connection))
    return held


def _drop_producer() -> None:
    held: tuple[Connection, Producer] | None = getattr(_thread, "producer", None)
    _thread.producer = None
    if held is not None:
        held[0].release()
