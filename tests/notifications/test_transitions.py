"""The states a job moves to (notifications/engine/transitions.py), as docs/job-states.md's transitions table says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from notifications.engine.transitions import NextState
from notifications.models import Job, JobStatus

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)
LOCK_COLUMNS = ("next_attempt_at", "locked_until", "requeue_at")


def test_a_completed_job_is_finished_now_with_its_error_and_lock_columns_cleared() -> None:
    state = NextState.completed(attempts=2, at=NOW)

    assert (state.status, state.attempts, state.completed_at, state.finished_at) == (JobStatus.COMPLETED, 2, NOW, NOW)
    assert state.error_message is None
    assert [state.columns()[name] for name in LOCK_COLUMNS] == [None, None, None]
    assert state.finished


def test_a_job_failed_for_good_keeps_its_error_and_is_finished_but_not_completed() -> None:
    state = NextState.failed(attempts=3, at=NOW, error="HTTP 404")

    assert (state.status, state.error_message, state.finished_at, state.completed_at) == (
        JobStatus.FAILED,
        "HTTP 404",
        NOW,
        None,
    )
    assert [state.columns()[name] for name in LOCK_COLUMNS] == [None, None, None]
    assert state.finished


def test_a_job_waiting_for_its_retry_stays_processing_locked_until_it_is_due() -> None:
    due = NOW + timedelta(seconds=120)
    state = NextState.retry_at(due, attempts=1, error="HTTP 503", requeue_at=due + timedelta(seconds=60))

    assert (state.status, state.attempts, state.error_message) == (JobStatus.PROCESSING, 1, "HTTP 503")
    assert [state.columns()[name] for name in LOCK_COLUMNS] == [due, due, due + timedelta(seconds=60)]
    assert (state.completed_at, state.finished_at) == (None, None)
    assert not state.finished


def test_retry_job_puts_a_job_back_to_pending_with_no_attempts_and_only_its_requeue_time() -> None:
    state = NextState.requeued(requeue_at=NOW)

    assert state.columns() == {
        "status": JobStatus.PENDING,
        "attempts": 0,
        "error_message": None,
        "completed_at": None,
        "finished_at": None,
        "next_attempt_at": None,
        "locked_until": None,
        "requeue_at": NOW,
    }


def test_every_column_a_transition_writes_is_a_column_of_the_job() -> None:
    job_fields = {field.name for field in Job._meta.concrete_fields}

    assert set(NextState.requeued(requeue_at=NOW).columns()) <= job_fields
