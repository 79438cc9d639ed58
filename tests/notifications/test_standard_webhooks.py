"""Every signed delivery also carries the Standard Webhooks headers, which the specification's own Python library
verifies (https://www.standardwebhooks.com/); NotifyHub's own header stays as it was (docs/delivery-engine.md)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
import stripe
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from accounts.models import SigningSecret
from accounts.services import signing_secret_delete, signing_secret_generate
from core.signing import standard_signature_header, verify_signature
from tests.conftest import Client, wait_for_job
from tests.fakes.receiver import Receiver
from tests.notifications.test_webhook_delivery import send

pytestmark = pytest.mark.usefixtures("worker")


def standard_headers(arrival: Any) -> dict[str, str]:
    return {name: arrival.headers[name] for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}


def verifies(secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
    try:
        Webhook(secret).verify(body, dict(headers))
    except WebhookVerificationError:
        return False
    return True


def test_the_standard_webhooks_library_verifies_a_real_delivery_and_stripe_still_does(
    free: Client, receiver: Receiver
) -> None:
    secret = signing_secret_generate(account=free.account)

    job_id = send(free, receiver, payload={"amount": 12.5, "note": "naïve"})
    wait_for_job(job_id)

    arrival = receiver.wait_for(1)[0]
    headers = standard_headers(arrival)
    assert headers["webhook-id"] == arrival.headers["X-Webhook-Id"] == job_id
    assert headers["webhook-timestamp"] == arrival.headers["X-Webhook-Timestamp"]
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(secret).verify(arrival.body, headers) == {"amount": 12.5, "note": "naïve"}
    assert stripe.WebhookSignature.verify_header(
        arrival.body.decode(), arrival.headers["X-Webhook-Signature"], secret, tolerance=300
    )
    assert not verifies("whsec_" + "0" * 64, arrival.body, headers)


def test_a_tampered_body_a_swapped_id_or_an_old_timestamp_fails(free: Client, receiver: Receiver) -> None:
    secret = signing_secret_generate(account=free.account)
    wait_for_job(send(free, receiver))
    arrival = receiver.wait_for(1)[0]
    headers = standard_headers(arrival)
    old = int(time.time()) - 6 * 60  # past the library's five minutes
    resigned_long_ago = {
        **headers,
        "webhook-timestamp": str(old),
        "webhook-signature": standard_signature_header(secret, headers["webhook-id"], old, arrival.body),
    }

    assert verifies(secret, arrival.body, headers)
    assert not verifies(secret, arrival.body.replace(b"signup", b"signin"), headers)
    assert not verifies(secret, arrival.body, {**headers, "webhook-id": "00000000-0000-0000-0000-000000000000"})
    assert not verifies(secret, arrival.body, resigned_long_ago)


def test_an_unsigned_delivery_carries_no_signature_and_custom_headers_cannot_forge_one(
    free: Client, receiver: Receiver
) -> None:
    forged = {"webhook-signature": "v1,forged", "Webhook-Id": "forged", "webhook-timestamp": "1"}

    wait_for_job(send(free, receiver, headers=forged))
    signing_secret_generate(account=free.account)
    wait_for_job(send(free, receiver, headers=forged))

    unsigned, signed = receiver.wait_for(2)
    assert not {"webhook-id", "webhook-timestamp", "webhook-signature"} & {name.lower() for name in unsigned.headers}
    assert signed.headers["webhook-signature"] != "v1,forged"
    assert signed.headers["webhook-id"] != "forged"
    assert signed.headers["webhook-timestamp"] != "1"


def both_schemes_verify(secret: str, arrival: Any) -> bool:
    """Each library, and the stdlib recipe, on the delivery as it arrived."""
    ours = arrival.headers["X-Webhook-Signature"]
    return (
        verifies(secret, arrival.body, standard_headers(arrival))
        and verify_signature(secret, ours, arrival.body)
        and bool(stripe_verifies(secret, arrival.body, ours))
    )


def stripe_verifies(secret: str, body: bytes, header: str) -> bool:
    try:
        return bool(stripe.WebhookSignature.verify_header(body.decode(), header, secret, tolerance=300))
    except stripe.SignatureVerificationError:
        return False


def test_after_a_rotation_the_old_and_the_new_secret_both_verify_until_the_overlap_ends(
    free: Client, receiver: Receiver, settings: Any
) -> None:
    old = signing_secret_generate(account=free.account)
    new = signing_secret_generate(account=free.account)

    wait_for_job(send(free, receiver))
    SigningSecret.objects.filter(account=free.account).update(previous_signs_until=timezone.now())
    wait_for_job(send(free, receiver))
    settings.SIGNING_SECRET_OVERLAP_SECONDS = 0
    newest = signing_secret_generate(account=free.account)
    wait_for_job(send(free, receiver))

    during, after, rotated_without_overlap = receiver.wait_for(3)
    # Newest first in both headers: two signatures each while the old secret still signs.
    assert during.headers["X-Webhook-Signature"].count("v1=") == 2
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    assert during.headers["webhook-signature"].split(" ")[0] == standard_signature_header(
        new, during.headers["webhook-id"], int(during.headers["webhook-timestamp"]), during.body
    )
    assert both_schemes_verify(old, during)
    assert both_schemes_verify(new, during)
    # Once the overlap is over, only the new one.
    assert after.headers["X-Webhook-Signature"].count("v1=") == 1
    assert both_schemes_verify(new, after)
    assert not both_schemes_verify(old, after)
    # With no overlap set, a rotation stops the old secret at once.
    assert both_schemes_verify(newest, rotated_without_overlap)
    assert not both_schemes_verify(new, rotated_without_overlap)


def test_after_delete_a_delivery_carries_no_signature_even_within_an_overlap(free: Client, receiver: Receiver) -> None:
    signing_secret_generate(account=free.account)
    signing_secret_generate(account=free.account)
    signing_secret_delete(account=free.account)

    wait_for_job(send(free, receiver))

    signed = {"x-webhook-signature", "x-webhook-timestamp", "webhook-id", "webhook-timestamp", "webhook-signature"}
    assert not signed & {name.lower() for name in receiver.wait_for(1)[0].headers}
