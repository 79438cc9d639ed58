"""Event endpoints: the account's, each tested and deleted from the page, a form adding one, the latest deliveries."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from core.errors import DomainError, EventEndpointNotFound
from dashboard.forms import EventEndpointAddForm
from dashboard.views.base import HolderView
from dashboard.views.webhooks import TESTS_PER_MINUTE, over_test_limit
from event_endpoints.models import ENDPOINTS_PER_ACCOUNT, EventEndpoint
from event_endpoints.selectors import endpoint_get, endpoint_list, recent_deliveries
from event_endpoints.services import endpoint_create, endpoint_delete
from notifications.delivery.http import stored_url
from notifications.services import webhook_test_send

RECENT_DELIVERIES = 20
TEMPLATE = "dashboard/events.html"


class _EventsPage(HolderView):
    """What the page's views share: the page itself, and the holder's endpoint an id names."""

    def _page(
        self, request: HttpRequest, *, status: int = 200, add_form: EventEndpointAddForm | None = None, **extra: Any
    ) -> HttpResponse:
        """The page as GET shows it, with what a POST adds: a refused form, or a test's result."""
        context: dict[str, Any] = {
            "endpoints": endpoint_list(account=self.account),
            "endpoints_per_account": ENDPOINTS_PER_ACCOUNT,
            "add_form": add_form or EventEndpointAddForm(),
            "deliveries": recent_deliveries(account=self.account, limit=RECENT_DELIVERIES),
            "tests_per_minute": TESTS_PER_MINUTE,
            **extra,
        }
        return render(request, TEMPLATE, context, status=status)

    def _endpoint(self, endpoint_id: str) -> EventEndpoint:
        """The holder's endpoint of this id; another account's, a deleted one or a text that is no id is the 404
        page, as another account's job is."""
        try:
            return endpoint_get(account=self.account, endpoint_id=endpoint_id)
        except EventEndpointNotFound:
            raise Http404(EventEndpointNotFound.message) from None


class EventsView(_EventsPage, View):
    """The page by GET; adding posts back here and, once done, redirects."""

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._page(request)

    def post(self, request: HttpRequest) -> HttpResponse:
        form = EventEndpointAddForm(request.POST)
        if form.is_valid():
            try:
                endpoint = endpoint_create(account=self.account, **form.cleaned_data)
            except DomainError as error:  # the account has ENDPOINTS_PER_ACCOUNT already
                form.add_error(None, error.message)
            else:
                messages.success(request, f"{endpoint.url} now receives {', '.join(endpoint.events)} events.")
                return redirect("events")
        return self._page(request, add_form=form, status=400)


class EventEndpointTestView(_EventsPage, View):
    """Sends a sample event to one endpoint now, as the webhooks page's test does, within the same minute's tests."""

    def post(self, request: HttpRequest) -> HttpResponse:
        endpoint = self._endpoint(request.POST.get("id", ""))
        if refusal := over_test_limit(request, self.account, kind="webhook"):
            return self._page(request, tested=endpoint, test_error=refusal, status=429)
        try:
            result = webhook_test_send(account=self.account, url=stored_url(endpoint.url, endpoint.url_credentials))
        except DomainError as error:  # the address rules tightened since the endpoint was added
            return self._page(request, tested=endpoint, test_error=error.message, status=400)
        return self._page(request, tested=endpoint, test_result=result)


class EventEndpointDeleteView(_EventsPage, View):
    """GET asks to confirm, POST deletes: the question is a page of its own, so it needs no script."""

    def get(self, request: HttpRequest) -> HttpResponse:
        endpoint = self._endpoint(request.GET.get("id", ""))
        return render(request, "dashboard/event_endpoint_delete.html", {"endpoint": endpoint})

    def post(self, request: HttpRequest) -> HttpResponse:
        endpoint = self._endpoint(request.POST.get("id", ""))
        endpoint_delete(endpoint)
        messages.success(request, f"{endpoint.url} is deleted: it receives no more events.")
        return redirect("events")
