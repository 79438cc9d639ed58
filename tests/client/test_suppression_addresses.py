"""The client removes any address on the list, one with a `/` in it included (docs/suppressions.md)."""

from __future__ import annotations

from suppressions.models import Suppression, SuppressionReason
from tests.client.hubs import Hub
from tests.conftest import Client


def test_an_address_with_a_slash_is_removed(hub: Hub, holder: Client) -> None:
    for address in ("a/b@example.com", "b@example.com"):
        Suppression.objects.create(account=holder.account, email=address, reason=SuppressionReason.HARD_BOUNCE)

    removed = hub.run(lambda nh: nh.suppressions.remove("A/B@example.com"))

    assert removed.email == "a/b@example.com"
    assert list(Suppression.objects.filter(account=holder.account).values_list("email", flat=True)) == ["b@example.com"]
