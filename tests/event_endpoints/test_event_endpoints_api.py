"""Adding, listing and deleting event endpoints over the API, and the refusals (docs/event-endpoints.md)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Account
from core.crypto import decrypt
from core.signals import AccountEvent
from event_endpoints.models import Event, EventDelivery, EventEndpoint, EventType
from event_endpoints.services import endpoint_create, events_emit, events_purge
from tests.conftest import Client

URL = "https://hooks.example.com/notifyhub"


def refused(response: Any, status: int, message: str) -> None:
    assert response.status_code == status, response.json()
    assert (response.json()["success"], response.json()["error"]) == (False, message)


def test_an_endpoint_is_added_listed_and_deleted(free: Client) -> None:
    created = free.post("/api/v1/event-endpoints", {"url": URL, "events": ["job.failed", "email.bounced"]})

    assert created.status_code == 201, created.json()
    data = created.json()["data"]
    assert set(data) == {"id", "url", "events", "createdAt"}
    assert (data["url"], data["events"]) == (URL, ["job.failed", "email.bounced"])
    stored = EventEndpoint.objects.get(id=data["id"])
    assert (stored.account_id, stored.url, stored.events) == (free.account.id, URL, ["job.failed", "email.bounced"])
    assert free.get("/api/v1/event-endpoints").json()["data"] == {"data": [data]}

    deleted = free.delete(f"/api/v1/event-endpoints/{data['id']}")

    assert deleted.status_code == 200
    assert deleted.json()["data"] == {"id": data["id"], "message": "Event endpoint deleted"}
    assert not EventEndpoint.objects.exists()
    assert free.get("/api/v1/event-endpoints").json()["data"] == {"data": []}


def test_a_type_named_twice_is_kept_once_in_the_order_given(free: Client) -> None:
    body = {"url": URL, "events": ["job.completed", "job.failed", "job.completed"]}

    assert free.post("/api/v1/event-endpoints", body).json()["data"]["events"] == ["job.completed", "job.failed"]


def test_credentials_in_the_url_are_kept_encrypted_and_shown_masked(free: Client) -> None:
    created = free.post(
        "/api/v1/event-endpoints", {"url": "https://ops:s3cret@hooks.example.com/in", "events": ["job.failed"]}
    )

    assert created.json()["data"]["url"] == "https://***@hooks.example.com/in"
    stored = EventEndpoint.objects.get()
    assert stored.url == "https://***@hooks.example.com/in"
    assert stored.url_credentials is not None
    assert "s3cret" not in stored.url_credentials
    assert decrypt(stored.url_credentials) == "ops:s3cret"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"events": ["job.failed"]}, "url must be a valid HTTPS URL"),
        ({"url": "http://hooks.example.com/", "events": ["job.failed"]}, "url must be a valid HTTPS URL"),
        ({"url": 42, "events": ["job.failed"]}, "url must be a valid HTTPS URL"),
        ({"url": "https://hooks.example.com:99999/", "events": ["job.failed"]}, "url must be a valid HTTPS URL"),
        ({"url": "https://hooks.example.com:0/", "events": ["job.failed"]}, "url must be a valid HTTPS URL"),
        (
            {"url": "https://127.0.0.1/in", "events": ["job.failed"]},
            "url must not point to a local or private network address",
        ),
        (
            {"url": "https://localhost/in", "events": ["job.failed"]},
            "url must not point to a local or private network address",
        ),
        ({"url": URL}, "events must be a non-empty list of event types"),
        ({"url": URL, "events": []}, "events must be a non-empty list of event types"),
        ({"url": URL, "events": "job.failed"}, "events must be a non-empty list of event types"),
        ({"url": URL, "events": ["job.failed", "job.exploded"]}, "Unknown event type: job.exploded"),
        ({"url": URL, "events": [7]}, "Unknown event type: 7"),
    ],
)
def test_a_bad_url_or_event_list_is_400_and_stores_nothing(free: Client, body: dict[str, Any], message: str) -> None:
    refused(free.post("/api/v1/event-endpoints", body), 400, message)
    assert not EventEndpoint.objects.exists()


def test_a_sixth_endpoint_is_409(free: Client) -> None:
    for _ in range(5):
        endpoint_create(account=free.account, url=URL, events=["job.failed"])

    refused(
        free.post("/api/v1/event-endpoints", {"url": URL, "events": ["job.failed"]}),
        409,
        "An account may have at most 5 event endpoints. Delete one first.",
    )
    assert EventEndpoint.objects.count() == 5


def test_another_account_can_neither_see_nor_delete_an_endpoint_nor_read_its_deliveries(
    make_client: Any,
) -> None:
    owner, other = make_client(), make_client()
    endpoint = endpoint_create(account=owner.account, url=URL, events=["job.failed"])

    assert other.get("/api/v1/event-endpoints").json()["data"] == {"data": []}
    refused(other.delete(f"/api/v1/event-endpoints/{endpoint.id}"), 404, "Event endpoint not found")
    refused(other.get(f"/api/v1/event-endpoints/{endpoint.id}/deliveries"), 404, "Event endpoint not found")
    assert EventEndpoint.objects.filter(id=endpoint.id).exists()


@pytest.mark.parametrize("endpoint_id", [str(uuid.uuid4()), "not-a-uuid", "1"])
def test_an_unknown_endpoint_is_404(free: Client, endpoint_id: str) -> None:
    refused(free.delete(f"/api/v1/event-endpoints/{endpoint_id}"), 404, "Event endpoint not found")
    refused(free.get(f"/api/v1/event-endpoints/{endpoint_id}/deliveries"), 404, "Event endpoint not found")


def test_the_deliveries_page_lists_an_endpoints_deliveries_newest_first(free: Client) -> None:
    endpoint = endpoint_create(account=free.account, url=URL, events=["job.failed", "suppression.created"])
    endpoint_create(account=free.account, url=URL + "/other", events=["suppression.created"])
    events_emit(account_id=free.account.id, emitted=[AccountEvent(EventType.JOB_FAILED, {"id": "a"})])
    events_emit(account_id=free.account.id, emitted=[AccountEvent(EventType.SUPPRESSION_CREATED, {"email": "b"})])

    page = free.get(f"/api/v1/event-endpoints/{endpoint.id}/deliveries", limit="1").json()["data"]

    assert page["pagination"] == {"page": 1, "limit": 1, "total": 2, "totalPages": 2}
    (newest,) = page["data"]
    assert (newest["type"], newest["attempts"], newest["lastError"], newest["finishedAt"]) == (
        "suppression.created",
        0,
        None,
        None,
    )
    assert newest["status"] in ("pending", "processing", "completed", "failed")
    assert newest["eventId"] == str(Event.objects.get(type="suppression.created").id)
    assert EventDelivery.objects.filter(event__type="suppression.created").count() == 2
    refused(
        free.get(f"/api/v1/event-endpoints/{endpoint.id}/deliveries", page="0"), 400, "page must be a positive integer"
    )


def test_an_event_no_endpoint_subscribes_to_is_not_stored(free: Client) -> None:
    endpoint_create(account=free.account, url=URL, events=["job.failed"])

    deliveries = events_emit(account_id=free.account.id, emitted=[AccountEvent(EventType.JOB_COMPLETED, {"id": "a"})])

    assert deliveries == []
    assert not Event.objects.exists()


def test_the_account_says_whether_it_has_endpoints_as_they_come_and_go(free: Client) -> None:
    def has_endpoints() -> bool:
        return Account.objects.get(id=free.account.id).has_event_endpoints

    assert not has_endpoints()
    first = endpoint_create(account=free.account, url=URL, events=["job.failed"])
    second = endpoint_create(account=free.account, url=URL, events=["job.completed"])
    assert has_endpoints()

    assert free.delete(f"/api/v1/event-endpoints/{first.id}").status_code == 200
    assert has_endpoints()
    assert free.delete(f"/api/v1/event-endpoints/{second.id}").status_code == 200
    assert not has_endpoints()


def test_retention_deletes_old_events_whose_deliveries_finished_and_keeps_the_rest(free: Client) -> None:
    endpoint_create(account=free.account, url=URL, events=["job.failed"])
    old_done, old_waiting, recent = (
        events_emit(account_id=free.account.id, emitted=[AccountEvent("job.failed", {"n": n})])[0] for n in range(3)
    )
    EventDelivery.objects.filter(id__in=[old_done.id, recent.id]).update(status="completed")
    EventDelivery.objects.filter(id=old_waiting.id).update(status="processing")
    long_ago = timezone.now() - timedelta(days=91)
    Event.objects.filter(id__in=[old_done.event_id, old_waiting.event_id]).update(created_at=long_ago)

    purged = events_purge(created_before=timezone.now() - timedelta(days=90), batch_size=1)

    assert purged == 1
    assert set(Event.objects.values_list("id", flat=True)) == {old_waiting.event_id, recent.event_id}
    assert set(EventDelivery.objects.values_list("id", flat=True)) == {old_waiting.id, recent.id}
