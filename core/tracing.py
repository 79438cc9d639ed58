"""Traces, in OpenTelemetry's standard, when the operator asks for them (docs/observability.md, "Traces").

Only with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set does :func:`tracing_start` load the SDK (:mod:`core.otel`); unset,
no OpenTelemetry module is imported and the hooks below stay ``None``, so the code they sit in pays one attribute
read. Each process kind starts it where its work begins: a web process when its WSGI application is built
(notifyhub/wsgi.py, after gunicorn forked the worker), a Celery worker on ``worker_init`` (notifyhub/celery.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"

# Set by core.otel once traces are on: around a Celery task message's publish (see task_publishing).
task_publish_start: Callable[[dict[str, Any]], AbstractContextManager[None]] | None = None
# Set by core.otel once traces are on: adds attributes to the current span (in a worker, its task's span).
current_span_attributes_set: Callable[[Mapping[str, Any]], None] | None = None
# Set by core.otel once traces are on: ``trace_id`` and ``span_id`` of the current span, for the log lines.
log_ids: Callable[[], Mapping[str, str]] | None = None

_NO_SPAN: AbstractContextManager[None] = nullcontext()


def tracing_start() -> None:
    """Sets up the SDK and the instrumentations in this process, once, if ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set."""
    if os.environ.get(ENDPOINT_VARIABLE):
        # Imported here only: without the variable no OpenTelemetry module is loaded at all.
        from core import otel

        otel.start()


def task_publishing(headers: dict[str, Any]) -> AbstractContextManager[None]:
    """Around the publish of a task message with ``headers``: puts the current trace context into them, where the
    worker's Celery instrumentation reads it (the kept producer publishes without Celery's publish signals), and
    inside the block the broker's commands make no span; nothing when traces are off."""
    return _NO_SPAN if task_publish_start is None else task_publish_start(headers)
