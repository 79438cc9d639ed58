"""A finished job's announcement: written by the statement that records its last attempt, announced by a task behind
every job, a batch a transaction, once (docs/event-endpoints.md, "How an event is stored: the outbox")."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Account
from core.signals import account_events
from event_endpoints.models import Event, EventDelivery
from event_endpoints.queue import DELIVER_EVENT_TASK
from notifications.delivery.outcome import AttemptOutcome
from notifications.engine import store
from notifications.engine.processing import job_claim, job_record_attempt, jobs_sweep
from notifications.engine.queue import LAST_STEP
from notifications.models import DeliveryLog, Job, JobAnnouncement, JobType
from notifications.outcomes import ANNOUNCE_INTERVAL_SECONDS, ANNOUNCE_TASK, finished_jobs_announce
from notifications.services import finished_jobs_purge
from staff.services import account_erase
from tests.conftest import Client, locked_elsewhere
from tests.event_endpoints.test_event_delivery import subscribe
from tests.factories import JobFactory
from tests.fakes.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("delivery_settings")]

DELIVERED = AttemptOutcome(delivered=True, response_status=204, duration_ms=9, response_excerpt="")
Messages = Callable[[], list[dict[str, Any]]]


def _claimed(client: Client) -> tuple[Job, bool]:
    job = Job.objects.create(account=client.account, type=JobType.WEBHOOK, payload={}, destination="example.com")
    claim = job_claim(job_id=job.id)
    assert claim is not None
    return claim.job, claim.emits_events


def _finished(client: Client, outcome: AttemptOutcome = DELIVERED) -> Job:
    job, emits_events = _claimed(client)
    assert job_record_attempt(job=job, outcome=outcome, emits_events=emits_events) in ("completed", "failed")
    return job


def _announce_tasks(broker_messages: Messages) -> list[dict[str, Any]]:
    """The announcing tasks published within a few of their intervals (the jobs of one interval share one)."""
    published: list[dict[str, Any]] = []
    deadline = time.monotonic() + ANNOUNCE_INTERVAL_SECONDS * 5
    while time.monotonic() < deadline:
        published += [message for message in broker_messages() if message["task"] == ANNOUNCE_TASK]
        time.sleep(ANNOUNCE_INTERVAL_SECONDS / 2)
    return published


@pytest.fixture
def subscribed(free: Client, receiver: Receiver) -> Client:
    subscribe(free, receiver, "job.completed", "job.failed")
    free.account.refresh_from_db()
    return free


def test_the_record_statement_writes_the_announcement_and_the_task_waits_behind_every_job(
    subscribed: Client, broker_messages: Messages
) -> None:
    job, emits_events = _claimed(subscribed)
    assert emits_events

    with CaptureQueriesContext(connection) as queries:
        assert job_record_attempt(job=job, outcome=DELIVERED, emits_events=True) == "completed"

    # The job, its log, its tally and its announcement: still one statement on PostgreSQL.
    assert len(queries) == (1 if connection.vendor == "postgresql" else 6)
    log = DeliveryLog.objects.get(job=job)
    announced = JobAnnouncement.objects.values_list("job_id", "status", "attempts", "error_message", "finished_at")
    assert list(announced) == [(job.id, "completed", 1, None, log.created_at)]
    assert not Event.objects.exists()  # the events are written later, by the announcing task
    assert _announce_tasks(broker_messages) == [{"task": ANNOUNCE_TASK, "args": [], "priority": LAST_STEP}]


def test_a_job_finished_after_the_task_went_out_asks_for_another(subscribed: Client, broker_messages: Messages) -> None:
    _finished(subscribed)
    assert len(_announce_tasks(broker_messages)) == 1

    _finished(subscribed)
    assert len(_announce_tasks(broker_messages)) == 1


def test_the_announcing_task_stores_each_event_once_and_empties_the_outbox(
    subscribed: Client, broker_messages: Messages
) -> None:
    jobs = [_finished(subscribed) for _ in range(3)]
    assert len(_announce_tasks(broker_messages)) == 1  # one task for the three

    assert finished_jobs_announce(batch_size=2) == 3
    assert finished_jobs_announce() == 0

    assert not JobAnnouncement.objects.exists()
    events = {event.data["id"]: event for event in Event.objects.all()}
    assert set(events) == {str(job.id) for job in jobs}
    assert {event.type for event in events.values()} == {"job.completed"}
    assert {event.data["status"] for event in events.values()} == {"completed"}
    assert EventDelivery.objects.count() == 3
    delivered = [message for message in broker_messages() if message["task"] == DELIVER_EVENT_TASK]
    assert len(delivered) == 3
    assert {message["priority"] for message in delivered} == {LAST_STEP}


def test_a_job_retried_before_it_is_announced_is_announced_as_it_finished(subscribed: Client) -> None:
    job = _finished(subscribed, AttemptOutcome.failure("410 Gone", retryable=False, response_status=410))
    assert store.requeue_failed(account=subscribed.account, job_id=job.id, requeue_at=timezone.now()) is not None

    assert finished_jobs_announce() == 1

    event = Event.objects.get()
    assert event.type == "job.failed"
    assert (event.data["id"], event.data["status"], event.data["attempts"]) == (str(job.id), "failed", 1)
    assert event.data["errorMessage"] == "410 Gone"
    assert event.data["completedAt"] is None
    assert Job.objects.get(id=job.id).status == "pending"  # the job as it is now is not what was announced


def _finished_email(client: Client, outcome: AttemptOutcome, **labels: Any) -> Job:
    """An email with ``labels`` (tags, metadata) in its payload, as the send stores them, finished by ``outcome``."""
    payload = {"to": "user@example.com", "subject": "Receipt", "body": "<p>Thanks</p>", **labels}
    job = JobFactory(account=client.account, type=JobType.EMAIL, payload=payload)
    claim = job_claim(job_id=job.id)
    assert claim is not None
    recorded = job_record_attempt(job=claim.job, outcome=outcome, emits_events=claim.emits_events)
    assert recorded in ("completed", "failed")
    return job


def test_a_finished_emails_event_carries_its_tags_and_metadata_and_a_job_without_them_neither_key(
    subscribed: Client,
) -> None:
    labels = {"tags": ["receipt", "eu"], "metadata": {"order_id": "A-17", "plan": "pro"}}
    completed = _finished_email(subscribed, DELIVERED, **labels)
    rejected = AttemptOutcome.failure("550 Mailbox unavailable", retryable=False, response_status=422)
    failed = _finished_email(subscribed, rejected, **labels)
    tags_only = _finished_email(subscribed, DELIVERED, tags=["digest"])
    plain = _finished(subscribed)

    with CaptureQueriesContext(connection) as queries:
        assert finished_jobs_announce() == 4

    job_reads = [query["sql"] for query in queries if 'JOIN "notifications_job"' in query["sql"]]
    assert job_reads
    assert all('"labels"' in statement and '"payload"' not in statement for statement in job_reads)
    events = {event.data["id"]: event for event in Event.objects.all()}
    slim = set(events[str(plain.id)].data)
    assert (events[str(completed.id)].type, events[str(failed.id)].type) == ("job.completed", "job.failed")
    for job in (completed, failed):
        data = events[str(job.id)].data
        assert set(data) == slim | {"tags", "metadata"}
        assert (data["tags"], data["metadata"]) == (labels["tags"], labels["metadata"])
    assert events[str(failed.id)].data["errorMessage"] == "550 Mailbox unavailable"
    assert set(events[str(tags_only.id)].data) == slim | {"tags"}
    assert events[str(tags_only.id)].data["tags"] == ["digest"]
    assert not slim & {"tags", "metadata"}


def test_an_attempt_that_leaves_the_job_unfinished_writes_no_announcement(
    subscribed: Client, broker_messages: Messages
) -> None:
    _announce_tasks(broker_messages)  # the fixture's
    job, emits_events = _claimed(subscribed)
    failure = AttemptOutcome.failure("503 Service Unavailable", retryable=True)

    assert job_record_attempt(job=job, outcome=failure, emits_events=emits_events) == "processing"

    assert not JobAnnouncement.objects.exists()
    assert _announce_tasks(broker_messages) == []


def test_a_finished_job_of_an_account_without_endpoints_is_not_announced(
    free: Client, broker_messages: Messages
) -> None:
    job, emits_events = _claimed(free)
    assert not emits_events

    job_record_attempt(job=job, outcome=DELIVERED, emits_events=emits_events)

    assert not JobAnnouncement.objects.exists()
    assert _announce_tasks(broker_messages) == []


def test_the_sweeper_sends_the_task_again_for_an_announcement_left_waiting(
    subscribed: Client, broker_messages: Messages
) -> None:
    job = _finished(subscribed)
    assert _announce_tasks(broker_messages)  # and lost

    jobs_sweep()
    assert _announce_tasks(broker_messages) == []  # a fresh announcement's task may still be on its way

    JobAnnouncement.objects.filter(job=job).update(finished_at=timezone.now() - timedelta(seconds=10))
    jobs_sweep()
    assert _announce_tasks(broker_messages) == [{"task": ANNOUNCE_TASK, "args": [], "priority": LAST_STEP}]


@pytest.fixture
def failing_once() -> Iterator[None]:
    """An app listening to announcements that fails the first time: the batch it is part of is rolled back."""
    calls = []

    def listener(**_: object) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("listener failed")

    account_events.connect(listener, dispatch_uid="failing-once")
    yield
    account_events.disconnect(dispatch_uid="failing-once")


@pytest.mark.usefixtures("failing_once")
def test_a_batch_that_fails_is_announced_whole_by_the_next_run(subscribed: Client) -> None:
    _finished(subscribed)

    with pytest.raises(RuntimeError):
        finished_jobs_announce()
    assert JobAnnouncement.objects.count() == 1
    assert not Event.objects.exists()

    assert finished_jobs_announce() == 1
    assert Event.objects.count() == 1
    assert not JobAnnouncement.objects.exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SKIP LOCKED: SQLite runs one writer at a time")
def test_a_run_skips_the_announcements_another_run_holds(subscribed: Client) -> None:
    _finished(subscribed)

    with locked_elsewhere(JobAnnouncement.objects.select_for_update()) as held:
        assert len(held) == 1
        assert finished_jobs_announce() == 0  # not waited for, not announced twice

    assert finished_jobs_announce() == 1
    assert Event.objects.count() == 1


def test_purging_or_erasing_jobs_not_yet_announced_takes_their_announcements(subscribed: Client) -> None:
    purged = [_finished(subscribed), _finished(subscribed)]
    assert JobAnnouncement.objects.count() == 2

    list(finished_jobs_purge(finished_before=timezone.now() + timedelta(seconds=1)))
    assert not Job.objects.filter(id__in=[job.id for job in purged]).exists()
    assert not JobAnnouncement.objects.exists()

    _finished(subscribed)
    account_erase(account=Account.objects.get(id=subscribed.account.id))
    assert not Job.objects.exists()
    assert not JobAnnouncement.objects.exists()
    assert finished_jobs_announce() == 0


def test_the_migration_fills_the_labels_of_the_emails_stored_with_them_before_it(subscribed: Client) -> None:
    labelled = JobFactory(account=subscribed.account, type=JobType.EMAIL, created_at=timezone.now())
    labelled.payload |= {"tags": ["receipt"], "metadata": {"order_id": "A-17"}}
    plain = JobFactory(account=subscribed.account, type=JobType.EMAIL, created_at=timezone.now())
    webhook = JobFactory(account=subscribed.account, created_at=timezone.now())
    Job.objects.filter(id=labelled.id).update(payload=labelled.payload)
    Job.objects.update(labels=None)  # as the jobs were before the column existed
    fill_labels = __import__("notifications.migrations.0020_fill_job_labels", fromlist=["fill_labels"]).fill_labels

    fill_labels(apps, SimpleNamespace(connection=connection))

    assert dict(Job.objects.values_list("id", "labels")) == {
        labelled.id: {"tags": ["receipt"], "metadata": {"order_id": "A-17"}},
        plain.id: None,
        webhook.id: None,
    }
