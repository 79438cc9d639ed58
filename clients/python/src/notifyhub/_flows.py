"""What the client does, written once for both clients as generators that ask their transport for two things: send
this call's request (``Send``, answered with the outcome) and wait (``Sleep``). The sync client performs them with
``httpx.Client`` and ``time.sleep``, the async one with ``httpx.AsyncClient`` and ``asyncio.sleep``
(``_transports.py``); the rules of retrying and waiting live here only."""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from ._answers import result
from ._calls import Call
from ._errors import WaitTimeoutError
from ._models import FINAL_STATUSES, Job
from ._retry import Outcome, RetryPolicy

T = TypeVar("T")

FIRST_POLL_SECONDS = 0.5
LONGEST_POLL_SECONDS = 5.0


@dataclass(frozen=True)
class Send:
    call: Call[Any]


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Send | Sleep
# A Send is answered with its Outcome, a Sleep with None.
Flow = Generator[Step, Any, T]


def exchange(call: Call[T], retry: RetryPolicy) -> Flow[T]:
    """One call of the API: sent, then sent again for as long as the retry rule says (``_retry.py``)."""
    attempt = 0
    while True:
        outcome: Outcome = yield Send(call)
        wait = retry.wait_before_retry(call, outcome, attempt)
        if wait is None:
            return result(call, outcome)
        yield Sleep(wait)
        attempt += 1


def poll_until_final(read_job: Call[Job], retry: RetryPolicy, timeout: float) -> Flow[Job]:
    """Reads the job until it is completed or failed, waiting longer between reads each time: every read counts
    against the key's rate limit."""
    deadline = time.monotonic() + timeout
    pause = FIRST_POLL_SECONDS
    while True:
        job = yield from exchange(read_job, retry)
        left = deadline - time.monotonic()
        if job.status in FINAL_STATUSES:
            return job
        if left <= 0:
            raise WaitTimeoutError(job, timeout)
        yield Sleep(min(pause, left))
        pause = min(pause * 2, LONGEST_POLL_SECONDS)
