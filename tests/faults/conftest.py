"""The fault tests' service, all of its own: PostgreSQL (initdb, pg_ctl), Redis, an HTTPS receiver in this process,
and the Procfile's web, worker and beat under honcho, with Startup API keys to send with. ``pooled_harness`` lays it
out as docs/operations.md ("Beyond one machine") does: a PgBouncer in transaction pooling in front of PostgreSQL and
three worker nodes.

None of the suite's DATABASE_URL or REDIS_URL is used, so the tests run in the embedded `make test` as well. They
need initdb and pg_ctl (on PATH, or /usr/lib/postgresql/*/bin) and redis-server, and the pooled ones pgbouncer (on
PATH, or /usr/sbin): without them they skip, or fail under NOTIFYHUB_REQUIRE_SERVICES=true (CI). The processes' logs
stay in pytest's temporary folder ("faults0", "pooled0"), named in every failure.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from bench.common import REQUESTS_PER_KEY, ROOT
from tests.conftest import _unavailable, free_port
from tests.fakes.receiver import Receiver
from tests.faults.harness import Harness
from tests.faults.load import MAX_RATE, Traffic
from tests.faults.report import HEADER, ROWS, Fault, report_path, start_report
from tests.faults.services import (
    PgBouncer,
    Postgres,
    ProcfileProcesses,
    pgbouncer_binary,
    postgres_bin_dir,
    procfile_without_worker_restarts,
)
from tests.servers import RedisServer

# The suite's own settings, which must not reach the service's processes.
SUITE_VARIABLES = (
    "DATABASE_URL",
    "DATABASE_POOLER",
    "DATABASE_PREPARED_STATEMENTS",
    "REDIS_URL",
    "NOTIFYHUB_VAR_DIR",
    "DJANGO_SETTINGS_MODULE",
    "GUNICORN_BIND",
    "PORT",
    "PROMETHEUS_MULTIPROC_DIR",
)
# Keys enough that the fastest traffic stays well under each Startup key's 200 requests a minute.
API_KEYS = math.ceil(MAX_RATE * 60 / REQUESTS_PER_KEY) + 2
WARM_UP = Traffic("warm-up", rate=10, count=10)
# The worker's first task imports the delivery code and opens its connections.
WARM_UP_SECONDS = 90.0
# Worker nodes sharing one queue in the pooled layout, each its own Celery node name (worker.1, worker.2, ...).
POOLED_WORKERS = 3


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "faults: breaks a service of its own under load (tests/faults/); minutes long")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if ROWS:
        terminalreporter.write_sep("-", "fault tests")
        for line in [*HEADER.splitlines(), *ROWS]:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def fault_report() -> None:
    """The report of every scenario the session runs, the direct service's and the pooled one's, begun once."""
    start_report(report_path())


@pytest.fixture(scope="module")
def harness(
    ca: trustme.CA, ca_bundle: str, tmp_path_factory: pytest.TempPathFactory, fault_report: None
) -> Iterator[Harness]:
    bin_dir = _required_binaries()
    folder = tmp_path_factory.mktemp("faults")
    with contextlib.ExitStack() as stack:
        postgres = _started_postgres(stack, bin_dir, folder)
        env = _service_env(postgres.url, ca_bundle, folder / "var")
        yield _started_service(stack, ca, env, folder, postgres=postgres)


@pytest.fixture(scope="module")
def pooled_harness(
    ca: trustme.CA, ca_bundle: str, tmp_path_factory: pytest.TempPathFactory, fault_report: None
) -> Iterator[Harness]:
    """Every process's DATABASE_URL at a PgBouncer in transaction pooling (migrations too), with
    DATABASE_POOLER=pgbouncer; the Procfile's web and beat, and three worker nodes that are never started again."""
    bin_dir = _required_binaries()
    pgbouncer_bin = _required_pgbouncer()
    folder = tmp_path_factory.mktemp("pooled")
    with contextlib.ExitStack() as stack:
        postgres = _started_postgres(stack, bin_dir, folder)
        pgbouncer = PgBouncer(pgbouncer_bin, server_port=postgres.port, log_dir=folder)
        stack.callback(pgbouncer.remove)
        pgbouncer.start()
        env = {**_service_env(pgbouncer.url, ca_bundle, folder / "var"), "DATABASE_POOLER": "pgbouncer"}
        procfile = procfile_without_worker_restarts(folder)
        harness = _started_service(
            stack, ca, env, folder, postgres=postgres, pooler=pgbouncer, procfile=procfile, workers=POOLED_WORKERS
        )
        harness.processes.wait_for_workers(POOLED_WORKERS)
        yield harness


def _started_postgres(stack: contextlib.ExitStack, bin_dir: Path, folder: Path) -> Postgres:
    postgres = Postgres(bin_dir, log_dir=folder)
    stack.callback(postgres.stop)
    postgres.start()
    return postgres


def _started_service(
    stack: contextlib.ExitStack,
    ca: trustme.CA,
    env: dict[str, str],
    folder: Path,
    *,
    postgres: Postgres,
    pooler: PgBouncer | None = None,
    procfile: Path = ROOT / "Procfile",
    workers: int = 1,
) -> Harness:
    """Redis, the receiver, the seeded database and the Procfile's processes, warmed up; ``stack`` stops them."""
    redis = RedisServer(folder)
    stack.callback(redis.stop)
    redis.start()
    receiver = stack.enter_context(Receiver(ca))
    env = {**env, "REDIS_URL": redis.url}
    api_keys = _seed(env, folder)
    processes = ProcfileProcesses(
        env,
        web_port=free_port(),
        log_path=folder / "procfile.log",
        procfile=procfile,
        concurrency={"worker": workers},
    )
    stack.enter_context(processes)
    harness = Harness(postgres, redis, processes, receiver, api_keys, log_dir=folder, pooler=pooler)
    _warm_up(harness)
    return harness


def _required_binaries() -> Path:
    bin_dir = postgres_bin_dir()
    needs = {
        "PostgreSQL's initdb and pg_ctl": bin_dir is not None,
        "redis-server": shutil.which("redis-server") is not None,
        # The server refuses to run as root: as root it runs as the postgres user.
        "runuser": os.geteuid() != 0 or shutil.which("runuser") is not None,
    }
    if missing := [name for name, found in needs.items() if not found]:
        _unavailable(f"the fault tests need {', '.join(missing)}")
    assert bin_dir is not None
    return bin_dir


def _required_pgbouncer() -> Path:
    binary = pgbouncer_binary()
    if binary is None:
        _unavailable("the pooled fault tests need pgbouncer (apt-get install pgbouncer)")
    assert binary is not None
    return binary


def _service_env(database_url: str, ca_bundle: str, var_dir: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in SUITE_VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="notifyhub.settings",
        DATABASE_URL=database_url,
        NOTIFYHUB_VAR_DIR=str(var_dir),
        DEBUG="false",
        # The receiver is on 127.0.0.1, its certificate from the test's own CA; production keeps both off.
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="true",
        WEBHOOK_CA_BUNDLE=ca_bundle,
        LOG_FORMAT="text",
        PYTHONUNBUFFERED="1",  # each log line reaches honcho, and the log, as it is written
    )
    return env


def _seed(env: dict[str, str], folder: Path) -> list[str]:
    """Migrates the database and makes the API keys, in the service's environment."""
    command = [sys.executable, "-m", "tests.faults.seed", str(API_KEYS)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    (folder / "seed.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"migrating and seeding failed; see {folder / 'seed.log'}")
    keys: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return keys


def _warm_up(harness: Harness) -> None:
    """A few jobs through the whole service before any fault: every process has started and connected."""
    with harness.sending(WARM_UP) as load:
        pass
    now = time.time()
    warmed = harness.settle("warm-up", load, [Fault(now, now)], deadline_seconds=WARM_UP_SECONDS)
    if warmed.problems():
        raise RuntimeError(f"the service did not deliver: {warmed.problems()}; see {harness.processes.log_path}")
