"""The delivery engine's promise under real faults (docs/delivery-engine.md): the worker killed, Redis stopped,
PostgreSQL restarted, each while webhook jobs go through the API at a steady rate.

Each scenario holds the whole service to the same bars: every accepted job delivered, none left unfinished, a
repeated delivery only under its job's X-Webhook-Id, every job arrived within 30 s of the end of the first fault it
lived through, and no API answer other than 202, 429 or 503. A kill ends when it is sent; Redis and PostgreSQL
when they answer again. The figures are printed at the end of the session and written to <var dir>/faults.md.

Redis keeps nothing on disk here, as in CI: stopped, it loses every message it held. That is the harder case: a
Redis that persists (RDB, AOF) gives its queues back when it starts, short of its last second's writes at most.

FAULT_DEADLINE_SECONDS (default 45) is how long after a fault's end the test waits for the jobs before it counts
what is missing: longer, it measures how late the stragglers come.
"""

from __future__ import annotations

import os

import pytest

from tests.faults.harness import Harness
from tests.faults.load import Traffic
from tests.faults.report import Figures, record, report_path

DEADLINE_SECONDS = float(os.environ.get("FAULT_DEADLINE_SECONDS", "45"))
# Start-up (the first test), the traffic, then the wait for the jobs.
pytestmark = [pytest.mark.faults, pytest.mark.timeout(240 + DEADLINE_SECONDS)]

# One job in five is answered after a second, so each kill finds attempts under way. Each kill comes as a request
# is due: Redis hands a message pushed in the moment after a consumer died to that dead connection, so a job
# published then is lost by the broker, as it would be at any busy moment.
KILLS = Traffic("sigkill", rate=20, count=1000, slow=lambda n: n % 5 == 0, slow_seconds=1.0)
KILL_AT = (5.0, 14.0, 23.0, 32.0, 41.0)  # seconds into the traffic

REDIS_RATE, REDIS_STOP_AT, REDIS_DOWN_SECONDS = 15, 10.0, 10.0
# The 6 s before the stop are answered slowly: the worker falls behind, so messages wait in Redis when it stops.
REDIS = Traffic(
    "redis",
    rate=REDIS_RATE,
    count=30 * REDIS_RATE,
    slow=lambda n: 4 * REDIS_RATE <= n < REDIS_STOP_AT * REDIS_RATE,
    slow_seconds=1.5,
)

POSTGRES_RESTART_AT = 10.0
# One job in four is answered after 1.5 s, so attempts are under way while the database restarts.
POSTGRES = Traffic("postgres", rate=15, count=375, slow=lambda n: n % 4 == 0, slow_seconds=1.5)


def check(harness: Harness, figures: Figures) -> None:
    record(figures, report_path())
    problems = "\n".join(figures.problems())
    assert not problems, f"{figures.row()}\n{problems}\nlogs: {harness.log_dir}"


def test_five_worker_kills_during_a_thousand_jobs(harness: Harness) -> None:
    faults = []
    with harness.sending(KILLS) as load:
        for at in KILL_AT:
            load.wait_until(at)
            faults.append(harness.kill_worker())

    assert len(set(harness.killed)) == len(KILL_AT), "each kill found a worker that keep-running had started again"
    check(harness, harness.settle("5 worker SIGKILLs", load, faults, deadline_seconds=DEADLINE_SECONDS))


def test_redis_stopped_for_ten_seconds(harness: Harness) -> None:
    with harness.sending(REDIS) as load:
        load.wait_until(REDIS_STOP_AT)
        queued = harness.queued_messages()
        fault = harness.stop_redis_for(REDIS_DOWN_SECONDS)

    notes = f"down {fault.ended_at - fault.started_at:.1f} s; it kept nothing: {queued} queued message(s) lost"
    figures = harness.settle("Redis stopped 10 s", load, [fault], deadline_seconds=DEADLINE_SECONDS, notes=notes)
    check(harness, figures)


def test_a_postgres_restart(harness: Harness) -> None:
    check(harness, postgres_restarted_under_load(harness, "PostgreSQL restarted"))


def postgres_restarted_under_load(harness: Harness, fault: str) -> Figures:
    """PostgreSQL restarted while ``POSTGRES`` goes through the API (tests/faults/test_pooler.py: through PgBouncer)."""
    with harness.sending(POSTGRES) as load:
        load.wait_until(POSTGRES_RESTART_AT)
        restart = harness.restart_postgres()

    notes = f"`pg_ctl restart -m fast` took {restart.ended_at - restart.started_at:.1f} s"
    return harness.settle(fault, load, [restart], deadline_seconds=DEADLINE_SECONDS, notes=notes)
