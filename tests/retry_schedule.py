"""What a retry's row and task look like, a job's or an event delivery's alike: counted down when its wait is
short, left to the dispatcher (an event delivery's: its sweep) when longer (docs/delivery-engine.md,
"The dispatcher")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

# A retry left to the dispatcher is due for it a tick (JOB_DISPATCH_INTERVAL_SECONDS, 1) and a second ahead.
DISPATCH_LEAD = timedelta(seconds=2)
RETRY_GRACE = timedelta(seconds=30)  # JOB_RETRY_GRACE_SECONDS


def assert_counted_down(row: Any, task: dict[str, Any], *, priority: int) -> None:
    """``row`` waits for its retry with ``task`` published for then, and is due again only after the grace."""
    assert row.next_attempt_at is not None
    assert row.requeue_at == row.next_attempt_at + RETRY_GRACE
    assert (task["args"], task["priority"]) == ([str(row.id)], priority)
    assert task["eta"] == pytest.approx(row.next_attempt_at, abs=timedelta(seconds=0.1))


def assert_left_to_the_dispatcher(row: Any, *, recorded_at: datetime, seconds: int) -> None:
    """``row`` waits ``seconds`` from its record for its retry, no task out, due for the dispatcher just before."""
    assert row.next_attempt_at is not None
    assert round((row.next_attempt_at - recorded_at).total_seconds()) == seconds
    assert row.locked_until == row.next_attempt_at
    assert row.requeue_at == row.next_attempt_at - DISPATCH_LEAD


def assert_published_ahead(row: Any, task: dict[str, Any], *, due: datetime, priority: int) -> None:
    """The dispatcher published ``row``'s task counted down to ``due`` and made it due again only after the grace."""
    assert (task["args"], task["priority"]) == ([str(row.id)], priority)
    assert task["eta"] == pytest.approx(due, abs=timedelta(seconds=0.1))
    row.refresh_from_db()
    assert row.requeue_at == due + RETRY_GRACE
