"""The running service a fault test breaks, and what it measures afterwards.

Times are ``time.time()`` throughout: the receiver runs in this process and stamps arrivals with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from tests.fakes.receiver import Receiver, Reply
from tests.faults.load import Load, Traffic
from tests.faults.report import Delivery, Fault, Figures, figures, write_timeline
from tests.faults.services import PgBouncer, Postgres, ProcfileProcesses
from tests.servers import RedisServer

UNFINISHED = ("pending", "processing")


@dataclass
class Harness:
    postgres: Postgres
    redis: RedisServer
    processes: ProcfileProcesses
    receiver: Receiver
    api_keys: list[str]
    log_dir: Path
    pooler: PgBouncer | None = None  # in front of ``postgres``, when every process connects through it
    killed: list[int] = field(default_factory=list)

    @contextlib.contextmanager
    def sending(self, traffic: Traffic) -> Iterator[Load]:
        """Sends ``traffic`` in the background; leaving the block waits for the last answer."""
        self.receiver.answer_always(f"/{traffic.name}/slow", Reply(delay=traffic.slow_seconds))
        load = Load(traffic, port=self.processes.web_port, api_keys=self.api_keys, url=self.receiver.url)
        load.start()
        try:
            yield load
        except BaseException:
            load.stop()
            raise
        finally:
            load.join()

    # --- Faults -----------------------------------------------------------------------------------------------

    def kill_worker(self, node: str | None = None) -> Fault:
        """SIGKILL to the Celery worker (the one honcho names ``node``, of several), whatever it is doing. Under the
        Procfile bin/keep-running starts it again; under ``procfile_without_worker_restarts`` it stays dead."""
        pid = self.processes.worker_pids()[node] if node else self.processes.worker_pid()
        os.kill(pid, signal.SIGKILL)
        killed_at = time.time()
        self.killed.append(pid)
        return Fault(killed_at, killed_at)

    def stop_redis_for(self, seconds: float) -> Fault:
        """Redis stopped, then started again empty on its port after ``seconds``: it keeps nothing on disk."""
        started = time.time()
        self.redis.stop()
        time.sleep(max(0.0, started + seconds - time.time()))
        self.redis.start()  # returns once it answers PING
        return Fault(started, time.time())

    def restart_postgres(self) -> Fault:
        started = time.time()
        self.postgres.restart()
        return Fault(started, time.time())

    @contextlib.contextmanager
    def pooler_down(self, seconds: float) -> Iterator[list[Fault]]:
        """PgBouncer stopped (every client connection dropped), the block run while it is down, and PgBouncer started
        again on its port ``seconds`` after it stopped; the list then holds the fault."""
        assert self.pooler is not None, "the harness has no PgBouncer"
        faults: list[Fault] = []
        started = time.time()
        self.pooler.stop()
        try:
            yield faults
        finally:
            time.sleep(max(0.0, started + seconds - time.time()))
            self.pooler.start()  # returns once it answers
            faults.append(Fault(started, time.time()))

    def queued_messages(self) -> int:
        """Task messages waiting in Redis's queues (one list per priority); not those a worker holds."""
        client = self.redis.client()
        lists = [key for key in client.scan_iter("celery*") if client.type(key) == b"list"]
        return sum(cast(int, client.llen(key)) for key in lists)

    # --- What arrived -----------------------------------------------------------------------------------------

    def deliveries(self, traffic: Traffic) -> list[Delivery]:
        prefix = f"/{traffic.name}/"
        return [Delivery.of(arrival) for arrival in list(self.receiver.arrivals) if arrival.path.startswith(prefix)]

    def unfinished(self, job_ids: set[str]) -> dict[str, str]:
        """Status of each of ``job_ids`` still pending or processing in the database, or "missing" without a row."""
        if not job_ids:
            return {}
        with self.postgres.connect() as connection:
            rows = connection.execute(
                "SELECT id::text, status FROM notifications_job WHERE id = ANY(%s)",
                [[uuid.UUID(job_id) for job_id in job_ids]],
            ).fetchall()
        found = {str(job_id): str(status) for job_id, status in rows}
        return {job_id: found.get(job_id, "missing") for job_id in job_ids if found.get(job_id) in (None, *UNFINISHED)}

    def jobs_with_idempotency_key(self, key: str) -> int:
        with self.postgres.connect() as connection:
            found = connection.execute("SELECT count(*) FROM notifications_job WHERE idempotency_key = %s", [key])
            (count,) = found.fetchone() or (0,)
        return cast(int, count)

    def _settled(self, traffic: Traffic, job_ids: set[str]) -> bool:
        arrived = {delivery.webhook_id for delivery in self.deliveries(traffic)}
        return job_ids <= arrived and not self.unfinished(job_ids)

    def settle(
        self, fault: str, load: Load, faults: list[Fault], *, deadline_seconds: float, notes: str = ""
    ) -> Figures:
        """Waits until every accepted job arrived and finished in the database, or ``deadline_seconds`` after the
        last fault's end; then takes the figures."""
        job_ids = {answer.job_id for answer in load.answers if answer.job_id}
        deadline = max(f.ended_at for f in faults) + deadline_seconds
        while not self._settled(load.traffic, job_ids) and time.time() < deadline:
            time.sleep(0.5)
        unfinished = self.unfinished(job_ids)
        deliveries = self.deliveries(load.traffic)
        write_timeline(self.log_dir / f"{load.traffic.name}.json", load.started_at, load.answers, deliveries, faults)
        return figures(fault, load.answers, deliveries, faults, unfinished, notes)
