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

import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.conf import settings
from opentelemetry import context as context_api
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http import trace_exporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation import psycopg as psycopg_instrumentation
from opentelemetry.instrumentation import redis as redis_instrumentation
from opentelemetry.instrumentation import requests as requests_instrumentation
from opentelemetry.instrumentation._semconv import (
    _get_schema_url,
    _get_semconv_opt_in_modes,
    _OpenTelemetrySemanticConventionStability,
    _OpenTelemetryStabilitySignalType,
    _set_db_name,
    _set_db_statement,
    _set_db_system,
    _set_http_method,
    _set_http_url,
    _StabilityMode,
)
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.instrumentation.redis.util import _build_span_name, _extract_conn_attributes, _format_command_args
from opentelemetry.instrumentation.requests import RequestsInstrumentor
from opentelemetry.instrumentation.requests.version import __version__ as requests_instrumentation_version
from opentelemetry.instrumentation.utils import (
    http_status_to_status_code,
    is_http_instrumentation_enabled,
    is_instrumentation_enabled,
    suppress_http_instrumentation,
    suppress_instrumentation,
)
from opentelemetry.propagators.textmap import CarrierT, Getter, Setter, TextMapPropagator, default_getter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.semconv._incubating.attributes.user_agent_attributes import USER_AGENT_SYNTHETIC_TYPE
from opentelemetry.semconv.attributes.user_agent_attributes import USER_AGENT_ORIGINAL
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceState
from opentelemetry.util.http import (
    OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST,
    OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_RESPONSE,
    ExcludeList,
    detect_synthetic_user_agent,
    normalize_user_agent,
    parse_excluded_urls,
    sanitize_method,
)
from opentelemetry.util.types import Attributes
from requests import Response, Session
from requests.structures import CaseInsensitiveDict

from core import otlp_encoding, tracing
from core.logs import loggable_path, url_origin

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

DEFAULT_SERVICE_NAME = "notifyhub"
SERVER_SPAN_MIDDLEWARE = "core.otel.ServerSpanMiddleware"
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

    @contextmanager
    def task_publish_start(headers: dict[str, Any]) -> Iterator[None]:
        broker_propagator.inject(headers)
        with suppress_instrumentation():
            yield

    tracing.task_publish_start = task_publish_start
    tracing.current_span_attributes_set = _current_span_attributes_set
    tracing.log_ids = _log_ids


class MetaGetter(Getter[Mapping[str, Any]]):
    """A propagator's header, ``traceparent``, read from a request's ``META`` (``HTTP_TRACEPARENT``)."""

    def get(self, carrier: Mapping[str, Any], key: str) -> list[str] | None:
        value = carrier.get("HTTP_" + key.upper().replace("-", "_"))
        return None if value is None else [value]

    def keys(self, carrier: Mapping[str, Any]) -> list[str]:
        return [name[5:].lower().replace("_", "-") for name in carrier if name.startswith("HTTP_")]


META_GETTER = MetaGetter()


def _excluded_urls() -> ExcludeList | None:
    """``OTEL_PYTHON_DJANGO_EXCLUDED_URLS`` (else ``OTEL_PYTHON_EXCLUDED_URLS``), patterns matched as the
    instrumentation matched them, against the URL without its query; ``None`` when neither is set, so that a request
    builds no URL for it."""
    patterns = os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS", os.environ.get("OTEL_PYTHON_EXCLUDED_URLS", ""))
    return parse_excluded_urls(patterns) if patterns.strip() else None


# Off the framework's road: docs/departures.md, "server-span".
class ServerSpanMiddleware:
    """A request's server span, outermost in both middleware chains: the span the Django instrumentation's
    middleware made (its name, kind, parent from the request's ``traceparent``, its ``http.*`` and ``net.*``
    attributes, an error status on a 5xx or an exception), made once from ``META`` and the view's match.

    The instrumentation's middleware set its attributes twice, resolved the URL a second time for the name and built
    the absolute URI three times; here the name is the method until the view's match names its route. ``http.target``
    is the request log line's path (core/logs.py): never the query string, a one-time token in the path masked."""

    tracer: trace.Tracer = trace.NoOpTracer()  # start() sets the provider's
    excluded = _excluded_urls()

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self.excluded is not None and self.excluded.url_disabled(request.build_absolute_uri("?")):
            return self.get_response(request)
        meta = request.META
        method = _sanitized_method(meta)
        span = self.tracer.start_span(
            _span_name(method),
            context=propagate.extract(meta, getter=META_GETTER),
            kind=SpanKind.SERVER,
            attributes=_request_attributes(meta, method),
        )
        token = context_api.attach(trace.set_span_in_context(span))
        try:
            response = self.get_response(request)
            attributes: dict[str, Any] = {HTTP_TARGET: loggable_path(request), HTTP_STATUS_CODE: response.status_code}
            span.set_attributes(attributes)
            span.set_status(Status(http_status_to_status_code(response.status_code, server_span=True)))
            failure = getattr(request, _FAILURE, None)
            if failure is not None:
                _record_failure(span, failure)
            return response
        finally:
            span.end()
            context_api.detach(token)

    @staticmethod
    def process_view(request: HttpRequest, view: Any, args: Any, kwargs: Any) -> None:
        """The span named for the URL pattern that matched, as the instrumentation named it."""
        match = request.resolver_match
        span = trace.get_current_span()
        if match is None or not span.is_recording():
            return
        method = _span_name(_sanitized_method(request.META))
        if match.route:
            span.update_name(f"{method} {match.route}")
            span.set_attribute(HTTP_ROUTE, match.route)
        elif match.url_name:
            span.update_name(f"{method} {match.url_name}")

    @staticmethod
    def process_exception(request: HttpRequest, exception: Exception) -> None:
        """Django turns a view's exception into a 500 before this middleware's call returns: kept for the span."""
        setattr(request, _FAILURE, exception)


_FAILURE = "_notifyhub_server_span_exception"
HTTP_TARGET, HTTP_ROUTE, HTTP_STATUS_CODE = "http.target", "http.route", "http.status_code"
HTTP_VERSION_PREFIX = "HTTP/"


def _sanitized_method(meta: Mapping[str, Any]) -> str:
    """The request's method as the instrumentation's ``sanitize_method`` gives it: ``_OTHER`` for one outside the
    standard's."""
    return sanitize_method(str(meta.get("REQUEST_METHOD", "")).strip())


def _span_name(method: str) -> str:
    """The span's name before a route: the sanitized method, ``HTTP`` for ``_OTHER`` (as the instrumentation)."""
    return "HTTP" if method == "_OTHER" else method


def _request_attributes(meta: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The instrumentation's request attributes (its default, the older semantic conventions' names), from META and
    the sanitized method."""
    attributes: dict[str, Any] = {
        "http.method": method,
        "http.server_name": meta.get("SERVER_NAME"),
        "http.scheme": meta.get("wsgi.url_scheme"),
    }
    host = meta.get("HTTP_HOST")
    if host:
        attributes["net.host.name"] = attributes["http.host"] = host
    for name, port in (("net.host.port", meta.get("SERVER_PORT")), ("net.peer.port", meta.get("REMOTE_PORT"))):
        if port and str(port).isdigit():
            attributes[name] = int(port)
    remote_addr = meta.get("REMOTE_ADDR")
    if remote_addr:
        attributes["net.peer.ip"] = remote_addr
    remote_host = meta.get("REMOTE_HOST")
    if remote_host and remote_host != remote_addr:
        attributes["net.peer.name"] = remote_host
    user_agent = meta.get("HTTP_USER_AGENT")
    if user_agent:
        attributes["http.user_agent"] = user_agent
    flavor = str(meta.get("SERVER_PROTOCOL", ""))
    if flavor.upper().startswith(HTTP_VERSION_PREFIX):
        flavor = flavor[len(HTTP_VERSION_PREFIX) :]
    if flavor:
        attributes["http.flavor"] = flavor
    return {name: value for name, value in attributes.items() if value is not None}


def _record_failure(span: trace.Span, exception: Exception) -> None:
    """As the instrumentation's span ended on an exception: the exception as an event, an error status."""
    span.record_exception(exception)
    span.set_status(Status(StatusCode.ERROR, f"{type(exception).__name__}: {exception}"))


def _exporter() -> OTLPSpanExporter:
    """The SDK's OTLP/HTTP exporter, encoding its batches with core.otlp_encoding: the same bytes for less of the
    exporter thread's CPU, which the requests and attempts share."""
    # Off the framework's road: docs/departures.md, "otlp-encoding".
    # Typed as returning the request message; the exporter only serialises what it returns, as ours does.
    trace_exporter.encode_spans = otlp_encoding.encode_spans  # type: ignore[assignment]
    return OTLPSpanExporter()


def _resource() -> Resource:
    """The OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME resource, named ``notifyhub`` when neither names it."""
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return resource


def _instrument() -> None:
    """Django's requests (both middleware chains, core/handlers.py), Celery's tasks, PostgreSQL, Redis and outgoing
    HTTP."""
    server_spans_start(trace.get_tracer(TRACER_NAME))
    CeleryInstrumentor().instrument()
    # Off the framework's road: docs/departures.md, "client-span-start".
    # What each connection's traced cursor is made with, looked up when the connection opens.
    psycopg_instrumentation.CursorTracer = StatementTracer  # type: ignore[misc]
    PsycopgInstrumentor().instrument(enable_commenter=False)
    # Off the framework's road: docs/departures.md, "client-span-start".
    redis_instrumentation._traced_execute_factory = _redis_command_tracing  # what wraps each client's commands
    RedisInstrumentor().instrument()
    RequestsInstrumentor().instrument(request_hook=_origin_only)
    # Off the framework's road: docs/departures.md, "client-span-start".
    _lean_requests_start()


# Off the framework's road: docs/departures.md, "client-span-start".
class StatementTracer(psycopg_instrumentation.CursorTracer):
    """A statement's span as the psycopg instrumentation's cursor made it (its name, kind, attributes, an exception
    recorded with an error status), its attributes given as it starts and the span ended directly: the
    instrumentation opened two context managers a statement, made the span current around ``execute`` (inside it
    nothing traced runs) and set the attributes one call after another on the started span. Without the SQL
    commenter, which ``_instrument`` leaves off."""

    def traced_execution(self, cursor: Any, query_method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return query_method(*args, **kwargs)
        integration = self._db_api_integration
        statement = list(args)  # the statement and its parameters, as the instrumentation's helpers are typed
        operation = self.get_operation_name(cursor, statement)
        span = integration._tracer.start_span(
            operation or integration.database or integration.name,
            kind=SpanKind.CLIENT,
            attributes=self._statement_attributes(cursor, statement),
        )
        started, error = time.perf_counter(), None
        try:
            return query_method(*args, **kwargs)
        except Exception as exception:
            error = exception
            _record_failure(span, exception)
            raise
        finally:
            span.end()
            self._record_metrics(cursor, operation, started, error)

    def _statement_attributes(self, cursor: Any, args: list[Any]) -> dict[str, Any]:
        """``_populate_span``'s attributes: the database's, the statement's, the connection's, the parameters' when
        the instrumentation captures them."""
        integration = self._db_api_integration
        mode = integration._sem_conv_opt_in_mode_db
        attributes: dict[str, Any] = {}
        _set_db_system(attributes, integration.database_system, mode)
        _set_db_name(attributes, integration.database, mode)
        _set_db_statement(attributes, self.get_statement(cursor, args), mode)
        attributes.update(integration.span_attributes)
        if integration.capture_parameters and len(args) > 1:
            attributes["db.statement.parameters"] = str(args[1])
        return attributes


STOCK_REDIS_TRACING = redis_instrumentation._traced_execute_factory
# Commands whose span the instrumentation gives more attributes, from the command and its answer (RediSearch's).
REDIS_SEARCH_SPANS = frozenset({"redis.search", "redis.create_index"})


# Off the framework's road: docs/departures.md, "client-span-start".
def _redis_command_tracing(
    tracer: trace.Tracer,
    request_hook: Callable[..., None] | None = None,
    response_hook: Callable[..., None] | None = None,
) -> Callable[..., Any]:
    """What the Redis instrumentation wraps ``Redis.execute_command`` with: a command's span as its own wrapper made it
    (name, kind, ``db.statement``, ``db.redis.args_length``, the connection's attributes, an exception recorded with an
    error status), given its attributes as it starts and ended directly, not made current around the command (inside
    it nothing traced runs) nor set one attribute a call. With hooks, and for RediSearch's commands, the
    instrumentation's own wrapper."""
    stock = STOCK_REDIS_TRACING(tracer, request_hook, response_hook)
    if request_hook is not None or response_hook is not None:
        return stock
    modes = _get_semconv_opt_in_modes(
        (_OpenTelemetryStabilitySignalType.DATABASE, _OpenTelemetryStabilitySignalType.HTTP)
    )
    database_mode = modes[_OpenTelemetryStabilitySignalType.DATABASE]
    http_mode = modes[_OpenTelemetryStabilitySignalType.HTTP]

    def traced_execute_command(func: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return func(*args, **kwargs)
        name = _build_span_name(instance, args)
        if name in REDIS_SEARCH_SPANS:
            return stock(func, instance, args, kwargs)
        attributes: dict[str, Any] = {}
        _set_db_statement(attributes, _format_command_args(list(args)), database_mode)
        attributes["db.redis.args_length"] = len(args)
        connection_kwargs = getattr(getattr(instance, "connection_pool", None), "connection_kwargs", None)
        if connection_kwargs is not None:
            attributes.update(_extract_conn_attributes(connection_kwargs, database_mode, http_mode))
        span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        try:
            return func(*args, **kwargs)
        except Exception as exception:
            _record_failure(span, exception)
            raise
        finally:
            span.end()

    return traced_execute_command


def _lean_requests_start() -> None:
    """``Session.send`` traced by ``_requests_tracing`` in place of the requests instrumentation's wrapper, which it
    keeps when a variable asks for what only that wrapper gives: the newer semantic conventions' attributes and
    metrics, captured headers."""
    stock: Any = Session.send  # the instrumentation's wrapper, ``functools.wraps`` of requests' own
    if not getattr(stock, "opentelemetry_instrumentation_requests_applied", False):
        return  # the instrumentation did not instrument (a requests outside its supported versions)
    mode = _OpenTelemetrySemanticConventionStability._get_opentelemetry_stability_opt_in_mode(
        _OpenTelemetryStabilitySignalType.HTTP
    )
    captured = (
        OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST,
        OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_RESPONSE,
    )
    if mode is not _StabilityMode.DEFAULT or any(os.environ.get(name) for name in captured):
        return
    tracer = trace.get_tracer(
        requests_instrumentation.__name__, requests_instrumentation_version, schema_url=_get_schema_url(mode)
    )
    Session.send = _requests_tracing(  # type: ignore[method-assign]
        tracer, stock.__wrapped__, requests_instrumentation._excluded_urls_from_env
    )


# Off the framework's road: docs/departures.md, "client-span-start".
def _requests_tracing(
    tracer: trace.Tracer, send: Callable[..., Any], excluded_urls: ExcludeList | None
) -> Callable[..., Any]:
    """``send`` (requests' ``Session.send``) with an outgoing call's span as the requests instrumentation's wrapper
    made it under the older semantic conventions, its default, with ``_origin_only`` as its request hook (name, kind,
    ``http.method``, ``http.url`` the URL's origin alone, the user agent's attributes, ``http.status_code``, an error
    status on a 4xx or 5xx, an exception recorded): its attributes given as it starts, the origin among them rather
    than set again by the hook, the span ended directly and not made current around the call (inside it HTTP
    instrumentation is suppressed, as the wrapper suppressed it). Left out: the duration metric (no meter provider is
    set up, it went nowhere), the trace header (the global propagator injects none) and ``net.peer.ip`` (set only when
    ``http.client`` is instrumented, which NotifyHub never does)."""
    mode = _StabilityMode.DEFAULT

    @functools.wraps(send)
    def traced_send(session: Session, request: Any, **kwargs: Any) -> Any:
        if (excluded_urls and excluded_urls.url_disabled(request.url)) or not is_http_instrumentation_enabled():
            return send(session, request, **kwargs)
        method = sanitize_method(request.method.strip())
        attributes: dict[str, Any] = {}
        _set_http_method(attributes, request.method, method, mode)
        _set_http_url(attributes, url_origin(request.url), mode)
        if request.headers is None:
            request.headers = CaseInsensitiveDict()
        user_agent = normalize_user_agent(request.headers.get("User-Agent"))
        synthetic = detect_synthetic_user_agent(user_agent)
        if synthetic:
            attributes[USER_AGENT_SYNTHETIC_TYPE] = synthetic
        if user_agent:
            attributes[USER_AGENT_ORIGINAL] = user_agent
        span = tracer.start_span(_span_name(method), kind=SpanKind.CLIENT, attributes=attributes)
        try:
            with suppress_http_instrumentation():
                try:
                    response = send(session, request, **kwargs)
                except Exception as exception:
                    _response_status_set(span, getattr(exception, "response", None))
                    _record_failure(span, exception)
                    raise
            _response_status_set(span, response)
            return response
        finally:
            span.end()

    traced_send.opentelemetry_instrumentation_requests_applied = True  # type: ignore[attr-defined]
    return traced_send


def _response_status_set(span: trace.Span, response: Any) -> None:
    """``http.status_code`` and an error status on a 4xx or 5xx, as the instrumentation sets them from an answer."""
    if isinstance(response, Response):
        requests_instrumentation._set_http_status_code_attribute(span, response.status_code, {}, _StabilityMode.DEFAULT)


def server_spans_start(tracer: trace.Tracer) -> None:
    """A server span for every request: ``tracer``'s, from the middleware outermost in both chains (core/handlers.py
    builds the lean one from its own list)."""
    ServerSpanMiddleware.tracer = tracer
    settings.MIDDLEWARE = [SERVER_SPAN_MIDDLEWARE, *settings.MIDDLEWARE]
    settings.API_KEY_MIDDLEWARE = [SERVER_SPAN_MIDDLEWARE, *settings.API_KEY_MIDDLEWARE]


def _origin_only(span: trace.Span, request: Any) -> None:
    """An outgoing call's URL as its origin alone, as the delivery log line names it (docs/observability.md): a
    receiver's path or query may carry its secret."""
    recorded: Mapping[str, Any] = getattr(span, "attributes", None) or {}
    span.set_attributes({name: url_origin(request.url) for name in URL_ATTRIBUTES if name in recorded})


def _current_span_attributes_set(attributes: Mapping[str, Any]) -> None:
    trace.get_current_span().set_attributes(attributes)


def _log_ids() -> Mapping[str, str]:
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}
