"""The webhook client keeps its connections, to many destinations at once, and trusts its CAs through one TLS
context per process (docs/delivery-engine.md, "Webhooks")."""

from __future__ import annotations

import ssl
from contextlib import ExitStack
from typing import Any

import pytest
import trustme

from notifications.delivery.http import _session, _tls_context
from notifications.models import JobStatus
from notifications.services import webhook_job_create
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Receiver

pytestmark = pytest.mark.usefixtures("worker")


def deliver(client: Client, receiver: Receiver) -> None:
    job = wait_for_job(webhook_job_create(account=client.account, url=receiver.url(), payload={"n": 1}).id)
    assert job.status == JobStatus.COMPLETED, job.error_message


def test_two_deliveries_to_one_host_share_one_connection(free: Client, receiver: Receiver) -> None:
    deliver(free, receiver)
    deliver(free, receiver)

    assert len(receiver.arrivals) == 2
    assert receiver.connections == 1


def test_a_destination_keeps_its_connection_while_a_dozen_others_are_delivered_to(free: Client, ca: trustme.CA) -> None:
    with ExitStack() as stack:
        first, *others = [stack.enter_context(Receiver(ca)) for _ in range(12)]
        deliver(free, first)
        for other in others:
            deliver(free, other)
        deliver(free, first)

        assert len(first.arrivals) == 2
        assert first.connections == 1


def test_new_connections_share_one_tls_context_that_read_the_cas_once(
    free: Client, ca: trustme.CA, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that starts afresh: no session, no context yet.
    _session.cache_clear()
    _tls_context.cache_clear()
    loads: list[Any] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(context: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(context)
        load(context, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    with ExitStack() as stack:
        receivers = [stack.enter_context(Receiver(ca)) for _ in range(3)]
        for receiver in receivers:
            deliver(free, receiver)

        assert [receiver.connections for receiver in receivers] == [1, 1, 1]
    assert len(loads) == 1
