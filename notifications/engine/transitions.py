"""The states a job moves to, one named constructor per transition (docs/job-states.md, "Transitions").

A claim is the one transition not here: it is a single conditional statement whose new values depend on the row
(``started_at`` kept, ``claims`` + 1), so it is written out in `store.claim`. Every other change of a job's state
is a `NextState`, and `store` writes all of its columns, so a transition cannot forget to clear one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from notifications.models import JobStatus


@dataclass(frozen=True)
class NextState:
    """The columns of a job's state after a transition, each set, none left as it was."""

    status: JobStatus
    attempts: int
    error_message: str | None
    completed_at: datetime | None
    finished_at: datetime | None
    # While a job waits for its next attempt: when it is due, and no worker may claim it before then.
    next_attempt_at: datetime | None
    locked_until: datetime | None
    # When the sweeper re-sends the job's task if it is still unfinished; none once it is finished.
    requeue_at: datetime | None

    @classmethod
    def completed(cls, *, attempts: int, at: datetime) -> NextState:
        return cls(JobStatus.COMPLETED, attempts, None, at, at, None, None, None)

    @classmethod
    def failed(cls, *, attempts: int, at: datetime, error: str | None) -> NextState:
        """Failed for good: only Retry Job moves the job again."""
        return cls(JobStatus.FAILED, attempts, error, None, at, None, None, None)

    @classmethod
    def retry_at(cls, due: datetime, *, attempts: int, error: str | None, requeue_at: datetime) -> NextState:
        """Still ``processing``: taken up and not finished, waiting until ``due`` for its next attempt."""
        return cls(JobStatus.PROCESSING, attempts, error, None, None, due, due, requeue_at)

    @classmethod
    def paced(cls, turn: datetime, *, attempts: int, error: str | None, requeue_at: datetime) -> NextState:
        """Back to ``pending`` with no attempt made, until its endpoint's rate limit gives it ``turn``
        (docs/customer-webhooks.md, "Rate limit"): its attempts and last error as they were."""
        return cls(JobStatus.PENDING, attempts, error, None, None, None, turn, requeue_at)

    @classmethod
    def requeued(cls, *, requeue_at: datetime) -> NextState:
        """Retry Job: back to ``pending`` with its attempts from zero; its logs are kept."""
        return cls(JobStatus.PENDING, 0, None, None, None, None, None, requeue_at)

    @property
    def finished(self) -> bool:
        """Completed or failed for good: the job is counted in the DailyTally of ``finished_at``'s day."""
        return self.finished_at is not None

    def columns(self) -> dict[str, Any]:
        """Every column by field name, in field order: the SET of the statement that writes the transition."""
        return dict(vars(self))
