"""The Celery app: Redis broker in full mode, a file broker in embedded mode."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun, worker_init
from django.conf import settings
from django.db import close_old_connections

from core.logs import LogContextToken, log_context_pop, log_context_push
from core.tracing import tracing_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notifyhub.settings")

app = Celery("notifyhub")


@app.on_configure.connect
def read_django_settings(sender: Celery, **kwargs: Any) -> None:
    """Celery takes Django's CELERY_* settings as a dict, read when it first needs them.

    Celery looks several settings up on every publish, each under two names. Looked up on
    Django's settings object, every miss raises and catches an AttributeError; a dict answers
    at once. Settings do not change while a process runs, so the copy never goes stale.
    """
    # Off the framework's road: docs/departures.md, "celery-settings-dict".
    celery_settings = {name: getattr(settings, name) for name in dir(settings) if name.startswith("CELERY_")}
    # Spelled in upper case, this one is also Celery's pre-4.0 name, which it warns about.
    celery_settings["task_publish_retry_policy"] = celery_settings.pop("CELERY_TASK_PUBLISH_RETRY_POLICY")
    sender.config_from_object(celery_settings, namespace="CELERY")


app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def recycle_stale_connections(**kwargs: Any) -> None:
    """What Django does around each request: drop connections past CONN_MAX_AGE or broken."""
    close_old_connections()


# notifications.engine.queue.DELIVER_TASK: its module needs the apps loaded, and this one loads before them.
DELIVER_TASK = "notifications.deliver_job"
# A running task's log context, by task id, from its prerun signal to its postrun one.
_log_contexts: dict[str, LogContextToken] = {}


@task_prerun.connect
def log_the_job(task_id: str, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any], **_: Any) -> None:
    """Every line written while a job is delivered names it (docs/observability.md); the engine adds the attempt
    once it has claimed the job."""
    if task.name == DELIVER_TASK:
        job_id = kwargs["job_id"] if "job_id" in kwargs else args[0]
        _log_contexts[task_id] = log_context_push(job_id=str(job_id))


@task_postrun.connect
def forget_the_job(task_id: str, **_: Any) -> None:
    if (token := _log_contexts.pop(task_id, None)) is not None:
        log_context_pop(token)


@worker_init.connect
def trace_the_worker(**_: Any) -> None:
    """Traces, when configured (core/tracing.py), before the worker takes a task: in the worker's own process with
    the thread pool the Procfile runs; a prefork pool's children inherit it, the span exporter's thread restarted
    by the SDK after each fork."""
    tracing_start()
