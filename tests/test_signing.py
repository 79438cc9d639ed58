from __future__ import annotations

import stripe

from core.signing import signature_header, verify_signature

SECRET = "whsec_test"
BODY = b'{"event":"signup"}'
NOW = 1_800_000_000


def test_a_fresh_signature_verifies() -> None:
    header = signature_header(SECRET, NOW, BODY)

    assert verify_signature(SECRET, header, BODY, now=NOW + 10)


def test_stripe_verifies_our_format() -> None:
    header = signature_header(SECRET, NOW, BODY)

    assert stripe.WebhookSignature.verify_header(BODY.decode(), header, SECRET, tolerance=None)


def test_a_changed_body_fails() -> None:
    header = signature_header(SECRET, NOW, BODY)

    assert not verify_signature(SECRET, header, b'{"event":"signup" }', now=NOW)


def test_an_old_signature_is_a_replay() -> None:
    header = signature_header(SECRET, NOW, BODY)

    assert not verify_signature(SECRET, header, BODY, now=NOW + 301)
    assert verify_signature(SECRET, header, BODY, tolerance=600, now=NOW + 301)


def test_a_forged_timestamp_fails() -> None:
    header = signature_header(SECRET, NOW, BODY).replace(f"t={NOW}", f"t={NOW + 5}")

    assert not verify_signature(SECRET, header, BODY, now=NOW)


def test_malformed_headers_fail() -> None:
    for header in ["", "v1=abc", f"t={NOW}", "t=x,v1=abc", "garbage"]:
        assert not verify_signature(SECRET, header, BODY, now=NOW)


def test_any_of_several_v1_signatures_may_match() -> None:
    good = signature_header(SECRET, NOW, BODY).split(",")[1]

    assert verify_signature(SECRET, f"t={NOW},v1=deadbeef,{good}", BODY, now=NOW)
