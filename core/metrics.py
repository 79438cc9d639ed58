"""``GET /metrics``: Prometheus's text format, summed over every process that counts (docs/observability.md).

With ``PROMETHEUS_MULTIPROC_DIR`` set, prometheus_client keeps each process's metrics in files in
that folder, and a scrape sums the files of every web and worker process sharing it. The variable
comes from the environment only: prometheus_client chooses where values live when it is first
imported, before any code could set it. Without it (tests, a one-off command) a scrape shows the
metrics of the process that answers.

Metrics computed at scrape time (the queue's depth, from the database) are collectors handed to
:class:`MetricsView`: they run once per scrape, in the process that answers it. Every request's duration is
observed by ``core.logs.RequestLogMiddleware`` through :func:`request_observed`.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views import View
from prometheus_client import REGISTRY, CollectorRegistry, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from core.api.headers import header_api_key
from core.client_address import client_address

_request_seconds = Histogram(
    "notifyhub_http_request_duration_seconds",
    "Time to answer a request, by the URL pattern that matched it and the answer's status.",
    ["route", "status"],
    # From the accept path's few milliseconds to a sender-domain request waiting on three providers' timeouts.
    buckets=(0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120),
)
# The route of a request no URL pattern matched, or answered before its URL was resolved (a refused Host header).
UNMATCHED_ROUTE = "unmatched"
# Each (route, status) series, kept once looked up, so the accept path skips prometheus_client's label lookup. As many
# as the URLconf has patterns times the statuses they answer.
_request_series: dict[tuple[str, int], Histogram] = {}


def request_observed(request: HttpRequest, status: int, seconds: float) -> None:
    """Counts an answer under its URL pattern, never its path: ids in paths would make a series per job, and
    unknown paths one per guess."""
    match = request.resolver_match
    key = (match.route if match else UNMATCHED_ROUTE, status)
    series = _request_series.get(key) or _request_series.setdefault(key, _request_seconds.labels(*key))
    series.observe(seconds)


class MetricsView(View):
    """The metrics, for ``Authorization: Bearer METRICS_TOKEN`` when that is set. Without a token an embedded run
    answers anyone, and a deployment only a scraper on its own loopback interface."""

    http_method_names = ["get", "head"]
    collectors: Sequence[Collector] = ()

    def get(self, request: HttpRequest) -> HttpResponse:
        if settings.METRICS_TOKEN is None and not (settings.EMBEDDED_MODE or _from_loopback(request)):
            return HttpResponse(LOOPBACK_ONLY, status=403, content_type="text/plain")
        if not token_accepted(request):
            return unauthorized()
        encode, content_type = choose_encoder(request.headers.get("Accept", ""))
        return HttpResponse(encode(self.registry()), content_type=content_type)

    def registry(self) -> CollectorRegistry:
        registry = CollectorRegistry()
        if settings.PROMETHEUS_MULTIPROC_DIR:
            MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
        else:
            registry.register(REGISTRY)
        for collector in self.collectors:
            registry.register(collector)
        return registry


LOOPBACK_ONLY = "Without METRICS_TOKEN the metrics are answered only on the loopback interface\n"


def _from_loopback(request: HttpRequest) -> bool:
    """Whether the scraper is on this host. A forwarded request is not, unless the proxies in front are counted
    (TRUSTED_PROXY_HOPS) and the client they name is: a proxy on this host would otherwise look local."""
    forwarded = settings.TRUSTED_PROXY_HOPS == 0 and "HTTP_X_FORWARDED_FOR" in request.META
    try:
        return not forwarded and ipaddress.ip_address(client_address(request)).is_loopback
    except ValueError:
        return False


def token_accepted(request: HttpRequest) -> bool:
    token: str | None = settings.METRICS_TOKEN
    if token is None:
        return True
    _, presented = header_api_key(request.META)
    return hmac.compare_digest(presented.encode(), token.encode())


def unauthorized() -> HttpResponse:
    response = HttpResponse(
        "Send the metrics token as Authorization: Bearer <token>\n", status=401, content_type="text/plain"
    )
    response["WWW-Authenticate"] = 'Bearer realm="NotifyHub metrics"'
    return response
