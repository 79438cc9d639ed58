"""Messages: one webhook job per enabled endpoint taking the type, stored together, read back, and an endpoint's
failed deliveries recovered (docs/customer-webhooks.md, "Messages")."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AuditEntry, KeyScope, UsagePeriod
from accounts.plans import Plan
from accounts.selectors import usage_get
from accounts.services import api_key_create, usage_consume
from core.crypto import encrypt
from customer_webhooks import messages
from customer_webhooks.models import App, Endpoint, Message
from notifications.engine.processing import jobs_dispatch
from notifications.models import Job, JobStatus
from notifications.tasks import enqueue_jobs
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client
from tests.factories import AppFactory, EndpointFactory, FailedJobFactory
from tests.notifications.test_test_mode import with_test_key

Messages = Callable[[], list[dict[str, Any]]]
PAYLOAD = {"invoice": "in_1", "amount": 4200}


def messages_path(app: App | str) -> str:
    return f"/api/v1/apps/{app.id if isinstance(app, App) else app}/messages"


def send(client: Client, app: App | str, **fields: Any) -> Any:
    return client.post(messages_path(app), {"eventType": "invoice.paid", "payload": PAYLOAD, **fields})


def accepted(response: Any) -> dict[str, Any]:
    assert response.status_code == 202, response.json()
    data: dict[str, Any] = response.json()["data"]
    return data


def stored(client: Client) -> tuple[int, int, int]:
    """The account's messages, jobs and quota units used."""
    account = client.account
    return Message.objects.filter(account=account).count(), Job.objects.filter(account=account).count(), _used(client)


def _used(client: Client) -> int:
    return usage_get(account=client.account).used


@pytest.fixture
def app(startup: Client) -> App:
    return AppFactory(account=startup.account, uid="customer-1")


def test_a_message_fans_out_to_each_enabled_endpoint_taking_its_type_its_tasks_carried_at_commit(
    startup: Client, app: App, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    every_type = EndpointFactory(app=app)
    paid = EndpointFactory(app=app, url="https://billing.example.com/hooks", event_types=["invoice.paid"])
    EndpointFactory(app=app, event_types=["invoice.created"])
    EndpointFactory(app=app, disabled=True)

    with django_capture_on_commit_callbacks(execute=True):
        data = accepted(send(startup, app, idempotencyKey="inv-1"))

    message = Message.objects.get(id=data["messageId"])
    assert (message.event_type, message.payload, message.idempotency_key) == ("invoice.paid", PAYLOAD, "inv-1")
    assert set(data) == {"messageId", "eventType", "createdAt", "deliveries"}
    assert (data["eventType"], {d["endpointId"] for d in data["deliveries"]}) == (
        "invoice.paid",
        {str(every_type.id), str(paid.id)},
    )
    jobs = {str(job.endpoint_id): job for job in Job.objects.filter(message=message)}
    assert {d["jobId"] for d in data["deliveries"]} == {str(job.id) for job in jobs.values()}
    job = jobs[str(paid.id)]
    assert job.payload == {
        "url": "https://billing.example.com/hooks",
        "method": "POST",
        "payload": PAYLOAD,
        "eventType": "invoice.paid",
    }
    assert (job.type, job.status, job.destination, job.max_attempts, job.test) == (
        "webhook",
        "pending",
        "billing.example.com",
        8,
        False,
    )
    assert (job.account_id, job.idempotency_key, job.quota_taken) == (startup.account.pk, None, True)
    assert _used(startup) == 2
    # Once the transaction commits, one task on the first step carries the deliveries to a worker; its run publishes
    # each delivery's task at a normal job's step. None is left for the dispatcher, whose run finds nothing due (the
    # sweeper's time is a single send's).
    (carrier,) = broker_messages()
    assert (carrier["task"], carrier["priority"]) == ("notifications.enqueue_jobs", 0)
    assert sorted(carrier["args"]) == sorted(f"{job.id}:5" for job in jobs.values())
    enqueue_jobs(*carrier["args"])
    assert sorted(broker_messages(), key=lambda m: m["args"]) == sorted(
        ({"task": "notifications.deliver_job", "args": [str(job.id)], "priority": 5} for job in jobs.values()),
        key=lambda m: m["args"],
    )
    assert all(job.requeue_at > timezone.now() + timedelta(seconds=50) for job in jobs.values())
    jobs_dispatch()
    assert broker_messages() == []


@pytest.mark.redis
def test_a_delivery_to_a_rate_limited_endpoint_is_stored_with_its_turn_and_left_to_the_dispatcher(
    startup: Client, app: App, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    limited = EndpointFactory(app=app, rate_limit=5)

    with django_capture_on_commit_callbacks(execute=True):
        sent = [accepted(send(startup, app)) for _ in range(3)]

    first, second, third = (Job.objects.get(id=data["deliveries"][0]["jobId"]) for data in sent)
    assert first.endpoint_id == limited.id
    # The first's turn is now: due at once, its task carried at commit; its worker takes the turn kept for it.
    assert (first.locked_until, first.status) == (None, JobStatus.PENDING)
    # The others' 200 ms apart, each stored locked until then less the 50 ms it comes early, and due for the
    # dispatcher 2 s before: already, so each message's commit asked the dispatcher to run.
    assert second.locked_until is not None
    assert third.locked_until is not None
    assert (third.locked_until - second.locked_until).total_seconds() == pytest.approx(0.2, abs=0.05)
    assert all(job.requeue_at == job.locked_until - timedelta(seconds=2) for job in (second, third))
    assert [(m["task"], m["priority"]) for m in broker_messages()] == [
        ("notifications.enqueue_jobs", 0),
        ("notifications.dispatch_jobs", 0),
        ("notifications.dispatch_jobs", 0),
    ]
    # Its run publishes them on the first step, counted down to their turns.
    assert jobs_dispatch() == 2
    assert sorted((m["args"], m["priority"], m["eta"]) for m in broker_messages()) == sorted(
        ([str(job.id)], 0, pytest.approx(job.locked_until, abs=timedelta(seconds=0.1))) for job in (second, third)
    )


@pytest.mark.redis
def test_test_deliveries_are_not_paced_and_take_no_live_turn(startup: Client, app: App) -> None:
    EndpointFactory(app=app, rate_limit=5)
    EndpointFactory(app=app)
    test_key = with_test_key(startup)

    accepted(send(test_key, app))
    accepted(send(test_key, app))
    accepted(send(startup, app))  # the limited endpoint's first live delivery: its turn now, none taken before it

    assert Job.objects.filter(locked_until__isnull=False).count() == 0


class RolledBack(Exception):
    pass


def _sent_then_rolled_back(app: App, *, enabled_endpoints: list[Endpoint]) -> None:
    """A message stored (within the quota) in a caller's transaction that then rolls back."""
    with transaction.atomic():
        messages.message_send(
            account=app.account,
            app=app,
            enabled_endpoints=enabled_endpoints,
            event_type="invoice.paid",
            payload=PAYLOAD,
        )
        raise RolledBack()


def test_a_message_refused_publishes_nothing_and_a_rolled_back_one_neither(
    free: Client, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    app = AppFactory(account=free.account)
    for _ in range(3):
        EndpointFactory(app=app)
    usage_consume(account=free.account, units=98)

    with django_capture_on_commit_callbacks(execute=True) as published:
        assert send(free, app).status_code == 403
    with django_capture_on_commit_callbacks(execute=True) as published_later, pytest.raises(RolledBack):
        _sent_then_rolled_back(app, enabled_endpoints=list(app.endpoints.all())[:2])

    assert (published, published_later) == ([], [])
    assert broker_messages() == []
    assert (Message.objects.count(), Job.objects.count(), _used(free)) == (0, 0, 98)


def test_a_delivery_keeps_the_endpoints_url_credentials_encrypted_apart(startup: Client, app: App) -> None:
    credentials = encrypt("user:pass")
    EndpointFactory(app=app, url="https://***@hooks.example.com/in", url_credentials=credentials)

    job = Job.objects.get(id=accepted(send(startup, app))["deliveries"][0]["jobId"])

    assert (job.payload["url"], job.url_credentials) == ("https://***@hooks.example.com/in", credentials)


def test_a_message_no_endpoint_takes_is_accepted_with_no_delivery_and_no_quota(startup: Client, app: App) -> None:
    EndpointFactory(app=app, event_types=["invoice.created"])

    data = accepted(send(startup, app))

    assert data["deliveries"] == []
    assert stored(startup) == (1, 0, 0)


def test_the_app_is_named_by_its_uid_too(startup: Client, app: App) -> None:
    EndpointFactory(app=app)

    assert len(accepted(send(startup, "customer-1"))["deliveries"]) == 1


def test_the_deliveries_are_stored_all_or_none_within_the_quota(free: Client) -> None:
    app = AppFactory(account=free.account)
    for _ in range(3):
        EndpointFactory(app=app)
    usage_consume(account=free.account, units=98)

    refused = send(free, app)

    assert refused.status_code == 403
    assert refused.json()["code"] == "quota_exceeded"
    assert refused.json()["error"].startswith("Monthly usage limit exceeded (98/100).")
    assert (Message.objects.count(), Job.objects.count(), _used(free)) == (0, 0, 98)


def test_a_first_message_of_the_period_makes_its_usage_row_and_one_may_take_the_last_units(free: Client) -> None:
    app = AppFactory(account=free.account)
    for _ in range(3):
        EndpointFactory(app=app)
    UsagePeriod.objects.filter(account=free.account).delete()

    accepted(send(free, app))
    usage_consume(account=free.account, units=94)
    accepted(send(free, app))

    assert (Message.objects.count(), Job.objects.count(), _used(free)) == (2, 6, 100)


def test_the_same_idempotency_key_again_is_a_409_and_stores_nothing(startup: Client, app: App) -> None:
    EndpointFactory(app=app)
    first = accepted(send(startup, app, idempotencyKey="inv-1"))

    assert_error(send(startup, app, idempotencyKey="inv-1", payload={"other": 1}), 409, "Duplicate request detected")

    assert stored(startup) == (1, 1, 1)
    assert Message.objects.get().payload == PAYLOAD
    assert str(Message.objects.get().id) == first["messageId"]


def test_a_test_key_may_use_a_live_messages_key_and_another_account_too(
    startup: Client, app: App, make_client: Callable[..., Client]
) -> None:
    accepted(send(startup, app, idempotencyKey="k"))
    accepted(send(with_test_key(startup), app, idempotencyKey="k"))
    other = make_client(Plan.STARTUP)

    accepted(send(other, AppFactory(account=other.account), idempotencyKey="k"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"eventType": "Invoice.Paid"}, "eventType must be lowercase segments of a-z, 0-9, _ and - joined by dots"),
        ({"eventType": "invoice..paid"}, "eventType must be lowercase segments of a-z, 0-9, _ and - joined by dots"),
        ({"eventType": "a" * 129}, "eventType must be lowercase segments of a-z, 0-9, _ and - joined by dots"),
        ({"eventType": None}, "eventType must be lowercase segments of a-z, 0-9, _ and - joined by dots"),
        ({"payload": [1]}, "payload must be an object"),
        ({"payload": {"blob": "x" * 65536}}, "payload must be at most 64kb"),
        ({"idempotencyKey": "a\nb"}, "idempotencyKey must be a single line"),
    ],
)
def test_a_body_breaking_a_rule_is_a_400_and_stores_nothing(
    startup: Client, app: App, fields: dict[str, Any], message: str
) -> None:
    EndpointFactory(app=app)

    refused = send(startup, app, **fields)

    assert refused.status_code == 400
    assert refused.json()["code"] == "validation_failed"
    assert refused.json()["error"].startswith(message)
    assert stored(startup) == (0, 0, 0)


def test_a_payload_of_64kb_exactly_is_taken(startup: Client, app: App) -> None:
    framing = len('{"blob":""}')

    accepted(send(startup, app, payload={"blob": "x" * (65536 - framing)}))


def test_an_unknown_field_is_refused_first(startup: Client, app: App) -> None:
    refused = startup.post(messages_path(app), {"eventType": "BAD", "colour": "teal"})

    assert_error(refused, 400, "Unknown field: colour", "unknown_field")


def test_another_accounts_app_is_not_found_by_id_or_uid(
    startup: Client, app: App, make_client: Callable[..., Client]
) -> None:
    other = make_client(Plan.STARTUP)

    assert_error(send(other, app), 404, f"App {app.id} not found", "app_not_found")
    assert_error(send(other, "customer-1"), 404, "App customer-1 not found", "app_not_found")
    assert_error(other.get(messages_path(app)), 404, f"App {app.id} not found", "app_not_found")
    assert Message.objects.count() == 0


def test_a_test_keys_message_is_a_test_one_seen_by_test_keys_only(startup: Client, app: App) -> None:
    EndpointFactory(app=app)
    tester = with_test_key(startup)

    sent = accepted(send(tester, app))
    live = accepted(send(startup, app))

    assert sent["test"] is True
    assert "test" not in live
    assert Job.objects.get(id=sent["deliveries"][0]["jobId"]).test is True
    assert _used(startup) == 1  # the live delivery's unit alone
    assert [m["id"] for m in tester.get(messages_path(app)).json()["data"]["data"]] == [sent["messageId"]]
    assert [m["id"] for m in startup.get(messages_path(app)).json()["data"]["data"]] == [live["messageId"]]
    assert_error(
        startup.get(f"{messages_path(app)}/{sent['messageId']}"), 404, "Message not found", "message_not_found"
    )
    assert_error(tester.get(f"{messages_path(app)}/{live['messageId']}"), 404, "Message not found", "message_not_found")
    assert tester.get(f"{messages_path(app)}/{sent['messageId']}").json()["data"]["test"] is True


@pytest.mark.parametrize(
    ("scope", "sends", "reads"),
    [(KeyScope.FULL, 202, 200), (KeyScope.SEND, 202, 403), (KeyScope.READ, 403, 200)],
)
def test_full_and_send_keys_send_full_and_read_keys_read(
    startup: Client, app: App, scope: str, sends: int, reads: int
) -> None:
    key = replace(startup, api_key=api_key_create(account=startup.account, name="Scoped", scope=scope))

    assert send(key, app).status_code == sends
    assert key.get(messages_path(app)).status_code == reads
    if reads == 403:
        assert_error(key.get(messages_path(app)), 403, "This API key's scope does not allow this request")


def test_the_list_is_newest_first_paged_and_filtered_by_event_type(startup: Client, app: App) -> None:
    ids = [accepted(send(startup, app, eventType=kind))["messageId"] for kind in ("a.b", "c.d", "a.b")]

    page = startup.get(messages_path(app), limit=2).json()["data"]
    only = startup.get(messages_path(app), eventType="a.b").json()["data"]

    assert [m["id"] for m in page["data"]] == [ids[2], ids[1]]
    assert page["pagination"] == {"page": 1, "limit": 2, "total": 3, "totalPages": 2}
    assert set(page["data"][0]) == {"id", "eventType", "createdAt"}
    assert [m["id"] for m in only["data"]] == [ids[2], ids[0]]
    assert_error(startup.get(messages_path(app), eventType="A"), 400, only_type_error("eventType"), "validation_failed")


def only_type_error(name: str) -> str:
    return f"{name} must be lowercase segments of a-z, 0-9, _ and - joined by dots, at most 128 characters"


def test_a_message_shows_its_payload_and_each_deliverys_job_status(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)
    data = accepted(send(startup, app))
    job_id = data["deliveries"][0]["jobId"]
    Job.objects.filter(id=job_id).update(status=JobStatus.PROCESSING, attempts=2, error_message="503 Unavailable")

    shown = startup.get(f"{messages_path(app)}/{data['messageId']}").json()["data"]

    assert shown == {
        "id": data["messageId"],
        "eventType": "invoice.paid",
        "createdAt": data["createdAt"],
        "payload": PAYLOAD,
        "deliveries": [
            {
                "endpointId": str(endpoint.id),
                "jobId": job_id,
                "status": "processing",
                "attempts": 2,
                "maxAttempts": 8,
                "errorMessage": "503 Unavailable",
                "nextAttemptAt": None,
                "completedAt": None,
            }
        ],
    }
    assert startup.get(f"/api/v1/notifications/jobs/{job_id}").json()["data"]["maxAttempts"] == 8
    assert_error(startup.get(f"{messages_path(app)}/nope"), 404, "Message not found", "message_not_found")


def recover_path(app: App, endpoint: Endpoint | str) -> str:
    return f"/api/v1/apps/{app.id}/endpoints/{endpoint.id if isinstance(endpoint, Endpoint) else endpoint}/recover"


def _failed_delivery(endpoint: Endpoint, *, hours_ago: float, **fields: Any) -> Job:
    return FailedJobFactory(
        account=endpoint.app.account,
        endpoint=endpoint,
        created_at=timezone.now() - timedelta(hours=hours_ago),
        max_attempts=8,
        **fields,
    )


def test_recover_requeues_the_endpoints_failed_deliveries_since_a_time_and_publishes_them(
    startup: Client, app: App, broker_messages: Messages, django_capture_on_commit_callbacks: Any
) -> None:
    endpoint, other = EndpointFactory(app=app), EndpointFactory(app=app)
    recent = [_failed_delivery(endpoint, hours_ago=hours) for hours in (1, 2)]
    older = _failed_delivery(endpoint, hours_ago=5)
    elsewhere = _failed_delivery(other, hours_ago=1)
    completed = _failed_delivery(endpoint, hours_ago=1, status=JobStatus.COMPLETED)
    test_one = _failed_delivery(endpoint, hours_ago=1, test=True)
    since = (timezone.now() - timedelta(hours=3)).isoformat()

    with django_capture_on_commit_callbacks(execute=True):
        answer = startup.post(recover_path(app, endpoint), {"since": since})

    assert answer.status_code == 202, answer.json()
    assert answer.json()["data"] == {"requeued": 2}
    statuses = {job.id: Job.objects.get(id=job.id).status for job in [*recent, older, elsewhere, completed, test_one]}
    assert [statuses[job.id] for job in recent] == ["pending", "pending"]
    assert [statuses[job.id] for job in (older, elsewhere, completed, test_one)] == [
        "failed",
        "failed",
        "completed",
        "failed",
    ]
    assert Job.objects.get(id=recent[0].id).attempts == 0
    assert sorted(m["args"][0] for m in broker_messages()) == sorted(str(job.id) for job in recent)
    assert _used(startup) == 0  # each took its unit when it was accepted
    recorded = AuditEntry.objects.filter(account=startup.account, action="endpoint.recovered")
    assert [(entry.target, entry.api_key_id is not None) for entry in recorded] == [
        ("https://hooks.example.com/*** (app customer-1)", True)
    ]


def test_recover_by_a_test_key_requeues_test_deliveries_only(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)
    live, test_one = _failed_delivery(endpoint, hours_ago=1), _failed_delivery(endpoint, hours_ago=1, test=True)

    answer = with_test_key(startup).post(
        recover_path(app, endpoint), {"since": timezone.now().isoformat()[:10] + "T00:00:00Z"}
    )

    assert answer.json()["data"] == {"requeued": 1}
    assert (Job.objects.get(id=live.id).status, Job.objects.get(id=test_one.id).status) == ("failed", "pending")


@pytest.mark.parametrize(
    ("since", "message"),
    [
        (lambda: (timezone.now() + timedelta(minutes=5)).isoformat(), "since must not be in the future"),
        (lambda: (timezone.now() - timedelta(days=91)).isoformat(), "since must be within the last 90 days"),
        (lambda: "yesterday", "since must be an ISO 8601 date-time"),
    ],
)
def test_recover_refuses_a_since_in_the_future_or_past_retention(
    startup: Client, app: App, since: Callable[[], str], message: str
) -> None:
    endpoint = EndpointFactory(app=app)

    assert_error(startup.post(recover_path(app, endpoint), {"since": since()}), 400, message, "validation_failed")


def test_recover_of_another_accounts_endpoint_is_not_found(
    startup: Client, app: App, make_client: Callable[..., Client]
) -> None:
    other = make_client(Plan.STARTUP)
    theirs = EndpointFactory(app=AppFactory(account=other.account))
    failed = _failed_delivery(theirs, hours_ago=1)
    since = {"since": (timezone.now() - timedelta(hours=2)).isoformat()}

    assert_error(startup.post(recover_path(app, theirs), since), 404, "Endpoint not found", "endpoint_not_found")
    assert_error(startup.post(recover_path(app, "nope"), since), 404, "Endpoint not found", "endpoint_not_found")
    assert Job.objects.get(id=failed.id).status == "failed"


def test_recover_needs_a_full_key(startup: Client, app: App) -> None:
    endpoint = EndpointFactory(app=app)
    sender = replace(startup, api_key=api_key_create(account=startup.account, name="Sender", scope=KeyScope.SEND))

    refused = sender.post(recover_path(app, endpoint), {"since": timezone.now().isoformat()})

    assert_error(refused, 403, "This API key's scope does not allow this request", "api_key_scope_refused")


def test_recover_takes_more_failed_deliveries_than_a_page_holds_and_publishes_every_one(
    startup: Client,
    app: App,
    broker_messages: Messages,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(messages, "RECOVER_PAGE", 2)
    endpoint = EndpointFactory(app=app)
    failed = [_failed_delivery(endpoint, hours_ago=1 + n / 10) for n in range(5)]

    with django_capture_on_commit_callbacks(execute=True) as published:
        answer = startup.post(recover_path(app, endpoint), {"since": (timezone.now() - timedelta(days=1)).isoformat()})

    assert answer.json()["data"] == {"requeued": 5}
    assert len(published) == 5
    assert sorted(m["args"][0] for m in broker_messages()) == sorted(str(job.id) for job in failed)
    assert set(Job.objects.filter(id__in=[job.id for job in failed]).values_list("status", flat=True)) == {"pending"}


def _queries(client: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


def test_a_message_and_the_list_read_the_same_queries_however_many_deliveries(startup: Client, app: App) -> None:
    EndpointFactory(app=app)
    one = accepted(send(startup, app))["messageId"]
    for _ in range(4):
        EndpointFactory(app=app)
    five = accepted(send(startup, app))["messageId"]

    assert _queries(startup, f"{messages_path(app)}/{one}") == _queries(startup, f"{messages_path(app)}/{five}")
    assert _queries(startup, messages_path(app)) == _queries(startup, f"{messages_path(app)}?limit=1")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_messages_with_one_key_store_one_message_and_its_deliveries(
    make_client: Callable[..., Client],
) -> None:
    client = make_client(Plan.STARTUP)
    app = AppFactory(account=client.account)
    for _ in range(3):
        EndpointFactory(app=app)
    body = {"eventType": "invoice.paid", "payload": PAYLOAD, "idempotencyKey": "race"}

    def post(_: int) -> int:
        try:  # one client per thread: test clients keep state
            answer = APIClient().post(messages_path(app), body, format="json", HTTP_X_API_KEY=client.api_key)
            return int(answer.status_code)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = sorted(pool.map(post, range(10)))

    assert statuses == [202] + [409] * 9
    assert stored(client) == (1, 3, 3)
