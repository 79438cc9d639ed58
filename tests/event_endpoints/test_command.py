"""``manage.py eventendpoints EMAIL list|delete [ID]``: an account's event endpoints at the shell."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Account
from core.signals import AccountEvent
from event_endpoints.models import EventDelivery, EventEndpoint
from event_endpoints.services import endpoint_create, events_emit
from tests.conftest import Client


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command("eventendpoints", *args, stdout=out)
    return out.getvalue().splitlines()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as refused:
        run(*args)
    return str(refused.value)


def test_list_shows_each_endpoint_with_its_waiting_and_failed_deliveries(free: Client) -> None:
    email = free.account.user.email
    endpoint = endpoint_create(account=free.account, url="https://u:p@hooks.example.com/in", events=["job.failed"])
    deliveries = [events_emit(account_id=free.account.id, emitted=[AccountEvent("job.failed", {})])[0] for _ in "ab"]
    EventDelivery.objects.filter(id=deliveries[0].id).update(status="failed")

    lines = run(email, "list")

    assert lines == [
        f"{endpoint.id}\thttps://***@hooks.example.com/in\tjob.failed\t"
        f"{endpoint.created_at.isoformat(timespec='milliseconds').replace('+00:00', 'Z')}\t1 waiting\t1 failed",
        f"1 event endpoint(s) for {email}.",
    ]


def test_delete_removes_the_endpoint_and_says_so(free: Client) -> None:
    email = free.account.user.email
    endpoint = endpoint_create(account=free.account, url="https://hooks.example.com/in", events=["job.failed"])

    (line,) = run(email, "delete", str(endpoint.id))

    assert (
        line
        == f"Deleted the event endpoint {endpoint.id} (https://hooks.example.com/in) of {email}, with its deliveries."
    )
    assert not EventEndpoint.objects.exists()
    assert not Account.objects.get(pk=free.account.pk).has_event_endpoints


def test_refusals(free: Client, make_client: Callable[..., Client]) -> None:
    email = free.account.user.email
    theirs = endpoint_create(account=make_client().account, url="https://hooks.example.com/in", events=["job.failed"])

    assert refusal(email, "delete") == "'delete' needs the endpoint's id"
    assert refusal(email, "list", str(uuid.uuid4())) == "'list' takes no id"
    assert refusal(email, "delete", str(theirs.id)) == "Event endpoint not found"
    assert refusal(email, "delete", "nonsense") == "Event endpoint not found"
    assert EventEndpoint.objects.filter(id=theirs.id).exists()
