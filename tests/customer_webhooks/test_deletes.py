"""Deleting an endpoint or an app with many deliveries: the deliveries go in batches, every one of them and what hangs
off them, before the endpoint or app goes with its audit entry (customer_webhooks.services, ``_deliveries_delete``)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import AuditEntry, KeyMode
from customer_webhooks import services
from customer_webhooks.models import App, Endpoint, Message
from notifications.models import DeliveryLog, Job
from tests.conftest import Client
from tests.customer_webhooks.conftest import APPS, keyed
from tests.factories import AppFactory, DeliveryLogFactory, EndpointFactory

pytestmark = pytest.mark.django_db

MESSAGES = 5


@pytest.fixture
def app(startup: Client, monkeypatch: pytest.MonkeyPatch) -> App:
    """An app whose two endpoints each have a delivery of every message, a log each; deleted two rows a batch."""
    monkeypatch.setattr(services, "DELETE_BATCH_SIZE", 2)
    app = AppFactory(account=startup.account, uid="acme")
    EndpointFactory(app=app, url="https://doomed.acme.example/in")
    EndpointFactory(app=app, url="https://kept.acme.example/in")
    for number in range(MESSAGES):
        response = startup.post(f"{APPS}/acme/messages", {"eventType": "invoice.paid", "payload": {"n": number}})
        assert len(response.json()["data"]["deliveries"]) == 2
    for job in Job.objects.filter(account=startup.account):
        DeliveryLogFactory(job=job, attempt=1)
    return app


def test_an_endpoints_delete_takes_every_delivery_and_log_of_its_own_and_no_other(startup: Client, app: App) -> None:
    doomed, kept = (
        Endpoint.objects.get(url__startswith="https://doomed"),
        Endpoint.objects.get(url__startswith="https://kept"),
    )
    deliveries = [job_id.hex for job_id in Job.objects.filter(endpoint=doomed).values_list("id", flat=True)]

    with CaptureQueriesContext(connection) as queries:
        response = startup.delete(f"{APPS}/acme/endpoints/{doomed.id}")

    assert response.status_code == 200
    job_deletes = [query["sql"] for query in queries if query["sql"].startswith('DELETE FROM "notifications_job" ')]
    # In batches, and none left for the endpoint's own delete.
    assert [sum(job_id in statement for job_id in deliveries) for statement in job_deletes] == [2, 2, 1]
    assert response.json()["data"] == {"id": str(doomed.id), "message": "Endpoint deleted"}
    assert not Job.objects.filter(endpoint_id=doomed.id).exists()
    assert list(Job.objects.values_list("endpoint_id", flat=True).distinct()) == [kept.id]
    assert DeliveryLog.objects.filter(job__endpoint=kept).count() == Job.objects.count() == MESSAGES
    assert Message.objects.filter(app=app).count() == MESSAGES
    assert list(Endpoint.objects.values_list("id", flat=True)) == [kept.id]
    targets = AuditEntry.objects.filter(action="endpoint.deleted").values_list("target", flat=True)
    assert list(targets) == ["https://doomed.acme.example/*** (app acme)"]


def test_an_apps_delete_takes_every_delivery_log_message_and_endpoint(startup: Client, app: App) -> None:
    other = AppFactory(account=startup.account, uid="globex")
    EndpointFactory(app=other)
    startup.post(f"{APPS}/globex/messages", {"eventType": "invoice.paid", "payload": {}})
    tester = keyed(startup, mode=KeyMode.TEST)
    assert tester.post(f"{APPS}/acme/messages", {"eventType": "invoice.paid", "payload": {}}).status_code == 202
    assert Message.objects.filter(app=app, test=True).count() == 1

    response = startup.delete(f"{APPS}/acme")

    assert response.status_code == 200
    assert response.json()["data"] == {"id": str(app.id), "uid": "acme", "message": "App deleted"}
    assert not App.objects.filter(id=app.id).exists()
    assert not Endpoint.objects.filter(app_id=app.id).exists()
    assert not Message.objects.filter(app_id=app.id).exists()
    assert not DeliveryLog.objects.exists()
    assert list(Job.objects.values_list("message__app__uid", flat=True)) == ["globex"]
    assert list(AuditEntry.objects.filter(action="app.deleted").values_list("target", flat=True)) == ["acme"]
