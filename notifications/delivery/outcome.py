from __future__ import annotations

import time
from dataclasses import dataclass

# A test job's delivery log says what happened instead of a receiver's answer.
TEST_MODE_EXCERPT = "Test mode: nothing was sent"


@dataclass(frozen=True)
class AttemptOutcome:
    """What one delivery attempt came to; becomes one DeliveryLog row."""

    delivered: bool
    # Whether another attempt may succeed (5xx, network); ignored when delivered.
    retryable: bool = False
    error_message: str | None = None
    used_provider: str | None = None
    response_status: int | None = None
    duration_ms: int | None = None
    response_excerpt: str = ""
    provider_message_id: str | None = None
    # How long the receiver asked us to wait before trying again (its Retry-After), at most an hour.
    retry_after_seconds: int | None = None

    @classmethod
    def test_delivery(cls, *, used_provider: str | None = None) -> AttemptOutcome:
        """A test job's attempt: delivered as far as its job can tell, nothing sent (docs/rules.md, "Test mode")."""
        return cls(delivered=True, used_provider=used_provider, duration_ms=0, response_excerpt=TEST_MODE_EXCERPT)

    @classmethod
    def failure(cls, message: str, *, retryable: bool, **details: object) -> AttemptOutcome:
        return cls(delivered=False, retryable=retryable, error_message=message, **details)  # type: ignore[arg-type]


def elapsed_ms(started: float) -> int:
    """Milliseconds since ``started``, a ``time.monotonic()`` reading."""
    return round((time.monotonic() - started) * 1000)
