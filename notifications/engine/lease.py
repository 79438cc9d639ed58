"""Leases of the attempts under way in this process, renewed while they run (docs/delivery-engine.md, "Leases").

A claim holds its job for ``JOB_LEASE_SECONDS``, short so that the job of a worker that died is taken again
within seconds. An attempt that takes longer (a slow endpoint, an email through three providers) keeps its job:
one thread per process renews every lease under way once a third of it has passed, while the process lives.
The thread looks every sixth of a lease (every second at most), so a lease is renewed with at least half of it
left: a database that restarts in the meantime has that long to come back.

Renewing moves ``locked_until``, the value that proves the claim when its attempt is recorded, so a lease's
renewal and its record never overlap: each holds the lease's lock, and the record reads ``job.locked_until``
under it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Model
from django.utils import timezone

from core.unavailable import DATABASE_FAULTS

logger = logging.getLogger(__name__)

# The renewer looks at least this often, so a lease set shorter while it naps (a test's) is still renewed in time.
RENEWER_MAX_NAP_SECONDS = 1.0


def lease_length() -> timedelta:
    return timedelta(seconds=settings.JOB_LEASE_SECONDS)


# A claimed row: a job, or an event's delivery (event_endpoints), which is claimed the same way. Its
# ``locked_until`` is the lease's end.
LeasedT = TypeVar("LeasedT", bound=Model)

# Moves the lease's end from ``held_until`` to ``until``; False if its row is no longer held so (store.renew_lease,
# its model and row id bound).
LeaseRenewal = Callable[..., bool]


class Lease(Generic[LeasedT]):
    """One claim's hold on its row. ``job.locked_until`` is the lease's end; change it only under ``lock``."""

    def __init__(self, job: LeasedT, renew: LeaseRenewal) -> None:
        self.job = job
        self._renew = renew
        self.lock = threading.Lock()
        # Set once the attempt is recorded or abandoned: a lease that ended is never renewed again.
        self.ended = False

    @property
    def until(self) -> datetime:
        """When the lease ends: the claimed row's ``locked_until``."""
        until: datetime = getattr(self.job, "locked_until")  # noqa: B009  (a field both kinds of row have)
        return until

    def due_for_renewal(self, now: datetime) -> bool:
        return self.until - now < lease_length() * 2 / 3

    def renew(self, now: datetime) -> None:
        with self.lock:
            if self.ended:
                return
            until = now + lease_length()
            if self._renew(held_until=self.until, until=until):
                self.job.locked_until = until  # type: ignore[attr-defined]  # the field `until` reads
            else:
                # Another worker claimed the row after this lease ran out: this attempt's record will find so.
                self.ended = True
                logger.warning("%s: lease lost while its attempt ran", self.job)


class Renewer:
    """The leases under way in this process, and the thread that renews them."""

    def __init__(self) -> None:
        self._leases: dict[int, Lease[Any]] = {}
        self._guard = threading.Lock()
        self._thread_pid: int | None = None  # the process the thread runs in: a forked child starts its own

    @contextmanager
    def held(self, job: LeasedT, renew: LeaseRenewal) -> Iterator[Lease[LeasedT]]:
        """``job``'s lease, renewed by ``renew`` until the block ends."""
        lease = Lease(job, renew)
        with self._guard:
            self._start_thread_once()
            self._leases[id(lease)] = lease
        try:
            yield lease
        finally:
            with self._guard:
                del self._leases[id(lease)]

    def renew_due(self) -> None:
        """Renews each lease under way that is down to two thirds of its length."""
        now = timezone.now()
        with self._guard:
            due = [lease for lease in self._leases.values() if lease.due_for_renewal(now)]
        if not due:
            return
        try:
            for lease in due:
                lease.renew(now)
        except DATABASE_FAULTS as error:
            logger.warning("Could not renew %d lease(s), will try again: %s", len(due), error)
        finally:
            # This thread's own connection, opened only when there is something to renew.
            connection.close()

    def _start_thread_once(self) -> None:
        if self._thread_pid == os.getpid():
            return
        self._thread_pid = os.getpid()
        threading.Thread(target=self._renew_forever, name="lease-renewer", daemon=True).start()

    def _renew_forever(self) -> None:
        while True:
            time.sleep(min(settings.JOB_LEASE_SECONDS / 6, RENEWER_MAX_NAP_SECONDS))
            try:
                self.renew_due()
            except Exception:
                # The thread must outlive any one failure: the attempts under way depend on it.
                logger.exception("Renewing leases failed")


renewer = Renewer()
