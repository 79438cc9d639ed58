"""The OpenTelemetry SDK and its instrumentations, set up from the standard OTEL_* variables.

Imported only by :func:`core.tracing.tracing_start`, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set. The exporter
(OTLP over HTTP), its batch processor and the sampler read their own variables (``OTEL_EXPORTER_OTLP_*``,
``OTEL_BSP_*``, ``OTEL_TRACES_SAMPLER``); ``OTEL_SERVICE_NAME`` defaults to ``notifyhub``.

Our trace context leaves a process only through the broker, never on an HTTP call: the global propagator extracts
(a proxy's or a client's ``traceparent`` on a request, the context in a task message) and injects nothing, so the
HTTP client's instrumentation adds no header to a webhook or a provider call; the kept producer injects with the
configured propagator itself (docs/observability.md, "Traces").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from django.conf import settings
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http import trace_exporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.instrumentation.requests import RequestsInstrumentor
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.propagators.textmap import CarrierT, Getter, Setter, TextMapPropagator, default_getter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from core import otlp_encoding, tracing
from core.logs import url_origin

DEFAULT_SERVICE_NAME = "notifyhub"
TRACER_NAME = "notifyhub"
# Where the HTTP client's instrumentation puts a request's URL: the older semantic conventions' name and the stable one.
URL_ATTRIBUTES = ("http.url", "url.full")

_started = False  # a forked child (a prefork pool's) inherits its parent's set-up


class ExtractOnly(TextMapPropagator):
    """``inner``'s extraction, and no injection: nothing we call over HTTP learns our trace ids."""

    def __init__(self, inner: TextMapPropagator) -> None:
        self.inner = inner

    def extract(
        self, carrier: CarrierT, context: Context | None = None, getter: Getter[CarrierT] = default_getter
    ) -> Context:
        return self.inner.extract(carrier, context, getter)

    def inject(self, carrier: CarrierT, context: Context | None = None, setter: Setter[CarrierT] | None = None) -> None:
        return None

    @property
    def fields(self) -> set[str]:
        return set()


class NoLoneClientSpans(Sampler):
    """``inner``'s decision (``OTEL_TRACES_SAMPLER``), but a client span with no parent is dropped: the broker's
    commands outside any task (a worker's polling and acknowledgements, a publisher's connection check) would each
    be a trace of one span, noise in a back end and a third of a worker's spans."""

    def __init__(self, inner: Sampler) -> None:
        self.inner = inner

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        if kind is SpanKind.CLIENT and not trace.get_current_span(parent_context).get_span_context().is_valid:
            return SamplingResult(Decision.DROP)
        return self.inner.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"NoLoneClientSpans{{{self.inner.get_description()}}}"


def start() -> None:
    """Once per process tree: a forked child (a prefork pool's) inherits it, and the SDK's batch processor starts
    its exporting thread again after the fork."""
    global _started
    if _started:
        return
    _started = True
    provider = TracerProvider(resource=_resource())
    provider.sampler = NoLoneClientSpans(provider.sampler)  # before any tracer is made: each keeps the sampler
    provider.add_span_processor(BatchSpanProcessor(_exporter()))
    trace.set_tracer_provider(provider)
    broker_propagator = propagate.get_global_textmap()  # OTEL_PROPAGATORS' choice, W3C trace context by default
    propagate.set_global_textmap(ExtractOnly(broker_propagator))
    _instrument()
    tracer = trace.get_tracer(TRACER_NAME)

    @contextmanager
    def task_publish_start(headers: dict[str, Any]) -> Iterator[None]:
        broker_propagator.inject(headers)
        with suppress_instrumentation():
            yield

    def span_start(name: str, attributes: Mapping[str, Any]) -> AbstractContextManager[Any]:
        return tracer.start_as_current_span(name, attributes=attributes)

    tracing.task_publish_start = task_publish_start
    tracing.span_start = span_start
    tracing.log_ids = _log_ids


def _exporter() -> OTLPSpanExporter:
    """The SDK's OTLP/HTTP exporter, encoding its batches with core.otlp_encoding: the same bytes for less of the
    exporter thread's CPU, which the requests and attempts share."""
    # Off the framework's road: docs/departures.md, "otlp-encoding".
    trace_exporter.encode_spans = otlp_encoding.encode_spans
    return OTLPSpanExporter()


def _resource() -> Resource:
    """The OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME resource, named ``notifyhub`` when neither names it."""
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return resource


def _instrument() -> None:
    """Django's requests (both middleware chains), Celery's tasks, PostgreSQL, Redis and outgoing HTTP."""
    site_chain = list(settings.MIDDLEWARE)
    DjangoInstrumentor().instrument()
    # The instrumentation adds its middleware to settings.MIDDLEWARE; the lean chain (core/handlers.py) is built
    # from its own list, which needs it too, as outermost.
    added = [name for name in settings.MIDDLEWARE if name not in site_chain]
    settings.API_KEY_MIDDLEWARE = [*added, *settings.API_KEY_MIDDLEWARE]
    CeleryInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False)
    RedisInstrumentor().instrument()
    RequestsInstrumentor().instrument(request_hook=_origin_only)


def _origin_only(span: trace.Span, request: Any) -> None:
    """An outgoing call's URL as its origin alone, as the delivery log line names it (docs/observability.md): a
    receiver's path or query may carry its secret."""
    recorded: Mapping[str, Any] = getattr(span, "attributes", None) or {}
    span.set_attributes({name: url_origin(request.url) for name in URL_ATTRIBUTES if name in recorded})


def _log_ids() -> Mapping[str, str]:
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}
