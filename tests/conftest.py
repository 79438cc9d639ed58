from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import django_ratelimit.core
import pytest
import redis
import trustme
from celery.contrib.testing.worker import start_worker
from celery.worker import state as worker_state
from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Account
from accounts.plans import Plan
from accounts.services import account_create, provider_key_set
from accounts.throttle import reset_rate_limits
from domains.models import DomainRegistration, DomainStatus, SenderDomain
from notifications.models import Job
from notifyhub.celery import app as celery_app
from tests.clients import APIClient
from tests.fakes.receiver import Receiver

T = TypeVar("T")

pytest_plugins = ["tests.providers_fixtures"]

REQUIRE_SERVICES = os.environ.get("NOTIFYHUB_REQUIRE_SERVICES", "").lower() == "true"


def free_port() -> int:
    """A local port nothing listens on: bound for a moment, then let go (a connection to it is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _unavailable(reason: str) -> None:
    """CI must not pass by skipping: there a missing service fails the test."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (NOTIFYHUB_REQUIRE_SERVICES=true)")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _service_markers(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("postgres") and connection.vendor != "postgresql":
        _unavailable("needs PostgreSQL: set DATABASE_URL=postgres://...")
    if request.node.get_closest_marker("redis"):
        if not settings.REDIS_URL:
            _unavailable("needs Redis: set REDIS_URL=redis://...")
        try:
            redis.Redis.from_url(settings.REDIS_URL).ping()
        except redis.RedisError as error:
            _unavailable(f"Redis at REDIS_URL is unreachable: {error}")


class _StillClock:
    """What django-ratelimit reads for the time: one second for a whole test."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def time(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _fresh_rate_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    reset_rate_limits()
    caches[settings.RATELIMIT_USE_CACHE].clear()
    # Its fixed windows (sign-in, sign-up, test webhooks) end at any second: a test's burst of
    # tries must not straddle the end of one and find its count back at zero.
    monkeypatch.setattr(django_ratelimit.core, "time", _StillClock())


@dataclass
class Client:
    """An API client holding one account's key."""

    account: Account
    api_key: str
    http: APIClient

    def get(self, path: str, **params: Any) -> Any:
        return self.http.get(path, params, HTTP_X_API_KEY=self.api_key)

    def post(self, path: str, body: Any = None) -> Any:
        return self.http.post(path, body, format="json", HTTP_X_API_KEY=self.api_key)

    def delete(self, path: str) -> Any:
        return self.http.delete(path, HTTP_X_API_KEY=self.api_key)

    def send_webhook(self, **overrides: Any) -> Any:
        return self.post("/api/v1/notifications/webhook", {**WEBHOOK, **overrides})

    def send_email(self, **overrides: Any) -> Any:
        return self.post("/api/v1/notifications/email", {**EMAIL, **overrides})


WEBHOOK: dict[str, Any] = {"url": "https://hooks.example.com/in", "payload": {"event": "signup", "id": 42}}
EMAIL: dict[str, Any] = {"to": "user@example.com", "subject": "Welcome", "body": "<p>Hello</p>"}

_counter = iter(range(1, 10**9))


@pytest.fixture
def make_client(db: None) -> Callable[..., Client]:
    def make(plan: str = Plan.FREE, **account_fields: Any) -> Client:
        account, api_key = account_create(email=f"holder{next(_counter)}@example.com", plan=plan)
        if account_fields:
            Account.objects.filter(pk=account.pk).update(**account_fields)
            account.refresh_from_db()
        return Client(account=account, api_key=api_key, http=APIClient())

    return make


def send_concurrently(client: Client, body: dict[str, Any], *, count: int, workers: int) -> list[int]:
    """``count`` webhook sends from ``workers`` threads at once; each thread has its own connection."""

    def send(_: int) -> int:
        try:
            response = APIClient().post(  # one client per thread: test clients keep state
                "/api/v1/notifications/webhook", body, format="json", HTTP_X_API_KEY=client.api_key
            )
            return int(response.status_code)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(send, range(count)))


def ready_to_send(client: Client, *providers: str, domain: str = "example.com") -> Client:
    """A paid account with provider keys and a verified sending domain, set up in the database only."""
    for provider in providers or ("SENDGRID",):
        provider_key_set(account=client.account, provider=provider, api_key=f"{provider.lower()}-key")
    sender_domain = SenderDomain.objects.create(
        account=client.account, name=domain, status=DomainStatus.VERIFIED, verified_at=timezone.now()
    )
    for provider in providers or ("SENDGRID",):
        DomainRegistration.objects.create(
            domain=sender_domain, provider=provider, provider_domain_id="1", verified=True
        )
    return client


@pytest.fixture
def free(make_client: Callable[..., Client]) -> Client:
    return make_client(Plan.FREE)


@pytest.fixture
def startup(make_client: Callable[..., Client]) -> Client:
    return make_client(Plan.STARTUP)


@pytest.fixture
def broker_messages() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """Reads (and removes) what the accept path pushed to the real broker, Redis or files; a task sent with a
    countdown has its ``eta``."""

    def drain() -> list[dict[str, Any]]:
        messages = []
        with celery_app.connection_for_write() as conn, conn.SimpleQueue("celery") as queue:
            while True:
                try:
                    message = queue.get_nowait()
                except queue.Empty:
                    return messages
                eta = message.headers.get("eta")  # a countdown's: the worker that takes the task holds it till then
                messages.append(
                    {
                        "task": message.headers["task"],
                        "args": message.decode()[0] if isinstance(message.decode(), list) else None,
                        "priority": message.properties.get("priority"),
                        **({"eta": datetime.fromisoformat(eta)} if eta else {}),
                    }
                )
                message.ack()

    drain()
    yield drain
    drain()


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_bundle(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def receiver(ca: trustme.CA) -> Iterator[Receiver]:
    with Receiver(ca) as server:
        yield server


@pytest.fixture
def delivery_settings(settings: Any, ca_bundle: str) -> Any:
    """Deliveries to local HTTPS receivers, with retries seconds apart instead of minutes."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    settings.WEBHOOK_CA_BUNDLE = ca_bundle
    settings.WEBHOOK_TIMEOUT_SECONDS = 2
    settings.WEBHOOK_RETRY_DELAYS = [1, 2]
    settings.EMAIL_RETRY_DELAYS = [1, 2]
    return settings


def purge_broker() -> None:
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")


def worker_thread() -> Any:
    return start_worker(celery_app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=15)


@pytest.fixture(scope="module")
def _worker_thread(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    # One worker per test module: stopping one takes seconds on the file broker. It reads
    # settings when a task runs, so each test's overrides apply.
    with django_db_blocker.unblock():
        purge_broker()
        with worker_thread():
            yield
        purge_broker()


@pytest.fixture
def worker(_worker_thread: None, transactional_db: None, delivery_settings: Any) -> Iterator[None]:
    """A real Celery worker, in a thread of this process, consuming from the real broker. The test ends once the
    task it is running has ended: that task's record would meet the flush that empties the tables after the test,
    and their locks could deadlock it (a test that waits for a delivery's arrival, not for its record)."""
    yield
    worker_idle(timeout=WORKER_IDLE_TIMEOUT)


# A task under way ends within a webhook's timeout (2 s in tests) and its record; one slower is left to run on.
WORKER_IDLE_TIMEOUT = 10.0


def worker_idle(*, timeout: float) -> bool:
    """Waits until the worker thread runs no task (its pool is solo: one at a time); False if it still does."""
    deadline = time.monotonic() + timeout
    while worker_state.active_requests:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@contextmanager
def done_elsewhere(work: Callable[[], T]) -> Iterator[T]:
    """What ``work`` returns, run in another connection's transaction that stays open until the block ends and then
    commits: rows it locks stay locked, rows it writes stay unseen (and their unique keys held) until then."""
    done, release = threading.Event(), threading.Event()
    results: list[T] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                results.append(work())
                done.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert done.wait(10)
        yield results[0]
    finally:
        release.set()
        thread.join()


def locked_elsewhere(locking: QuerySet[Any]) -> AbstractContextManager[list[Any]]:
    """The rows ``locking`` (a ``select_for_update()`` query) reads, held by another connection's transaction until
    the block ends, as another worker's run holds the rows it took; the block gets them."""
    return done_elsewhere(lambda: list(locking))


def wait_for_job(job_id: str | UUID, *statuses: str, timeout: float = 20.0) -> Job:
    """Polls until the job reaches one of ``statuses`` (default: finished)."""
    wanted = statuses or ("completed", "failed")
    deadline = time.monotonic() + timeout
    while True:
        job = Job.objects.get(id=job_id)
        if job.status in wanted or time.monotonic() > deadline:
            return job
        time.sleep(0.05)
