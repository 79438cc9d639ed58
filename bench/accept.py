"""Accept-path benchmark: POST /api/v1/notifications/webhook against its floor, both under gunicorn.

`make bench` runs this. It recreates its own PostgreSQL database, uses its own Redis DB, seeds
Startup accounts, then serves the real app and the floor view (bench/floor_views.py) one after
the other with the same gunicorn.conf.py, loads each with wrk and prints one row per server.
bench/README.md explains what is measured and how to read the result.

Knobs (environment, or the matching --option): BENCH_SECONDS, BENCH_WARMUP_SECONDS,
BENCH_CONNECTIONS, BENCH_WRK_THREADS, BENCH_MAX_RPS, BENCH_DATABASE_URL, BENCH_REDIS_URL,
BENCH_APP_PORT, BENCH_FLOOR_PORT, BENCH_ROUNDS. WEB_CONCURRENCY reaches gunicorn.conf.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import runpy
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import psycopg

# Run as a script (`python bench/accept.py`): the repository root is not on the path yet.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (
    BenchError,
    bench_main,
    database_name,
    flush_redis,
    port_open,
    redis_client,
    reset_database,
    stop_group,
    wait_until_listening,
)
from bench.proc_cpu import busy_share, cpu_use_between, snapshot

ROOT = Path(__file__).resolve().parent.parent
VAR_DIR = ROOT / "var" / "bench"
KEYS_FILE = VAR_DIR / "api-keys.txt"
WRK_SCRIPT = ROOT / "bench" / "accept.lua"
GUNICORN_CONF = ROOT / "gunicorn.conf.py"
ACCEPT_PATH = "/api/v1/notifications/webhook"

# The targets.
MIN_FLOOR_SHARE = 0.60
MAX_P99_MS = 50.0

# A Startup key may make 200 requests a minute. A run, warm-up included, is shorter than a minute,
# so all of a key's requests share one window: plan for 150 a key to stay clear of the limit.
REQUESTS_PER_KEY = 150
# Before each server's run the bench waits (up to QUIET_WAIT_SECONDS) until other work on the machine keeps
# less than this share of its CPUs busy; the report warns when other work took more than it during a run.
BUSY_WARNING = 0.10
QUIET_WAIT_SECONDS = 60


@dataclass(frozen=True)
class Options:
    seconds: int
    warmup_seconds: int
    connections: int
    wrk_threads: int
    max_rps: int
    database_url: str
    redis_url: str
    app_port: int
    floor_port: int
    rounds: int

    @property
    def keys_per_round(self) -> int:
        return max(self.connections, math.ceil(self.max_rps * (self.warmup_seconds + self.seconds) / REQUESTS_PER_KEY))

    @property
    def key_count(self) -> int:
        # Each round loads keys of its own, so no key sees two rounds' requests within one minute.
        return self.keys_per_round * self.rounds


@dataclass(frozen=True)
class Target:
    name: str
    settings_module: str
    port: int


@dataclass(frozen=True)
class Result:
    target: str
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    non_202: int
    socket_errors: int
    jobs_stored: int
    # gunicorn's own CPU time per request (PostgreSQL, Redis and wrk not included): what a request costs the
    # web process, and far less disturbed by other work on the machine than requests per second.
    server_cpu_ms: float
    # Share of all CPUs used during the run by processes outside the bench: 0 on a quiet machine.
    others_share: float | None

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def errors(self) -> int:
        return self.non_202 + self.socket_errors


# --- Options ---------------------------------------------------------------------------


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from None


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=_env_int("BENCH_SECONDS", 20))
    parser.add_argument("--warmup-seconds", type=int, default=_env_int("BENCH_WARMUP_SECONDS", 3))
    parser.add_argument("--connections", type=int, default=_env_int("BENCH_CONNECTIONS", 16))
    # wrk runs on the same two cores as the servers: few threads leave them more CPU.
    parser.add_argument("--wrk-threads", type=int, default=_env_int("BENCH_WRK_THREADS", 2))
    parser.add_argument(
        "--max-rps",
        type=int,
        default=_env_int("BENCH_MAX_RPS", 3000),
        help="highest request rate to plan API keys for (more keys keep a faster app clear of the rate limit)",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/notifyhub_bench"),
    )
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    parser.add_argument("--app-port", type=int, default=_env_int("BENCH_APP_PORT", 8771))
    parser.add_argument("--floor-port", type=int, default=_env_int("BENCH_FLOOR_PORT", 8772))
    parser.add_argument(
        "--rounds",
        type=int,
        default=_env_int("BENCH_ROUNDS", 3),
        help="app then floor, this many times; the verdicts take the medians",
    )
    args = parser.parse_args(argv)
    if args.wrk_threads > args.connections:
        parser.error("wrk needs at least one connection per thread")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return Options(**vars(args))


# --- Services: a fresh database and an empty Redis DB of the bench's own -------------------


def count_jobs(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT count(*) FROM notifications_job").fetchone()
    return int(row[0]) if row else 0


def helper_pids(options: Options) -> list[int]:
    """The PostgreSQL backends serving the bench's database, and Redis when it runs on this machine."""
    with psycopg.connect(options.database_url) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    pids = [int(row[0]) for row in rows]
    server_info: dict[str, Any] = redis_client(options.redis_url).info("server")  # type: ignore[assignment]
    redis_pid = int(server_info["process_id"])
    if Path(f"/proc/{redis_pid}").exists():
        pids.append(redis_pid)
    return pids


def run_step(description: str, command: list[str]) -> None:
    """Runs a set-up command quietly; its output is shown only when it fails."""
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"{description} failed:\n{done.stdout}{done.stderr}")


def prepare(options: Options) -> None:
    reset_database(options.database_url)
    flush_redis(options.redis_url)
    run_step("migrate", [sys.executable, "manage.py", "migrate", "--noinput"])
    run_step(
        "seeding accounts",
        [sys.executable, "-m", "bench.seed", "--count", str(options.key_count), "--keys-file", str(KEYS_FILE)],
    )


def export_environment(options: Options) -> None:
    """Points everything this process starts at the bench's own database, Redis DB and state dir."""
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        DATABASE_URL=options.database_url,
        REDIS_URL=options.redis_url,
        NOTIFYHUB_VAR_DIR=str(VAR_DIR),
        DJANGO_SETTINGS_MODULE="notifyhub.settings",
        GUNICORN_ACCESS_LOG="off",
        DEBUG="false",
    )


# --- Servers ---------------------------------------------------------------------------


def gunicorn_shape() -> str:
    """The worker class and count gunicorn.conf.py sets in this environment, e.g. "4 sync workers"."""
    config = runpy.run_path(str(GUNICORN_CONF))
    shape = f"{config['workers']} {config['worker_class']} workers"
    return f"{shape} x {config['threads']} threads" if "threads" in config else shape


@contextlib.contextmanager
def serving(target: Target) -> Iterator[subprocess.Popen[bytes]]:
    """Runs gunicorn for ``target`` the way production does (gunicorn.conf.py), stopping it on exit."""
    if port_open(target.port):
        raise BenchError(f"port {target.port} is already in use; pick another with BENCH_{target.name.upper()}_PORT")
    log_path = VAR_DIR / f"gunicorn-{target.name}.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": target.settings_module,
        "GUNICORN_BIND": f"127.0.0.1:{target.port}",
    }
    gunicorn = Path(sys.executable).parent / "gunicorn"
    with log_path.open("wb") as log:
        # A session of its own: Ctrl-C reaches only this script, whose finally stops the group.
        process = subprocess.Popen(
            [str(gunicorn), "notifyhub.wsgi", "--config", str(GUNICORN_CONF)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until_listening(process, target.port, "gunicorn", log_path)
            yield process
        finally:
            stop_group(process)


def _tag(prefix: str) -> str:
    # Idempotency keys are unique per account, and both servers share the accounts: every load gets its own prefix.
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def smoke_check(target: Target, api_key: str) -> None:
    """One request before any load, so a broken server fails loudly instead of producing a fast row of errors."""
    body = {"url": "https://hooks.example.com/in", "payload": {"event": "bench.smoke"}, "idempotencyKey": _tag("smoke")}
    request = urllib.request.Request(
        f"http://127.0.0.1:{target.port}{ACCEPT_PATH}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-API-Key": api_key},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, reply = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, reply = exc.code, exc.read()
    except OSError as exc:
        raise BenchError(f"{target.name}: smoke request failed: {exc}") from exc
    if status != 202:
        raise BenchError(f"{target.name}: smoke request answered {status}, not 202: {reply[:300]!r}")


def wait_for_quiet_cpus(target: Target) -> None:
    """Waits (up to QUIET_WAIT_SECONDS) for other work on the machine to settle before a server's run."""
    deadline = time.monotonic() + QUIET_WAIT_SECONDS
    busy = busy_share(seconds=1.0)
    if busy is not None and busy > BUSY_WARNING:
        print(f"  {target.name}: other processes keep {busy:.0%} of the CPUs busy; waiting for them", flush=True)
    while busy is not None and busy > BUSY_WARNING and time.monotonic() < deadline:
        busy = busy_share(seconds=1.0)


# --- Load ------------------------------------------------------------------------------


def require_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: sudo apt-get install wrk (then re-run make bench)")
    return wrk


def run_wrk(wrk: str, options: Options, target: Target, *, seconds: int, tag: str, first_key: int) -> dict[str, int]:
    command = [
        wrk,
        "-t",
        str(options.wrk_threads),
        "-c",
        str(options.connections),
        "-d",
        f"{seconds}s",
        "--timeout",
        "5s",
        "-s",
        str(WRK_SCRIPT),
        f"http://127.0.0.1:{target.port}{ACCEPT_PATH}",
        "--",
        str(KEYS_FILE),
        tag,
        str(options.wrk_threads),
        str(first_key),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + 60)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"wrk did not finish on {target.name} within {seconds + 60} s") from exc
    line = next((line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise BenchError(f"wrk failed on {target.name} (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return {name: int(value) for name, value in (item.split("=", 1) for item in line.split()[1:])}


def measure(wrk: str, options: Options, target: Target, api_key: str, *, round_index: int) -> Result:
    print(f"  {target.name}: starting gunicorn on port {target.port}", flush=True)
    first_key = round_index * options.keys_per_round
    with serving(target) as server:
        smoke_check(target, api_key)
        wait_for_quiet_cpus(target)
        # Warm-up: every worker thread imports lazily, opens its database connection and its broker connection.
        if options.warmup_seconds > 0:
            warm_tag = _tag(f"{target.name}-warm")
            run_wrk(wrk, options, target, seconds=options.warmup_seconds, tag=warm_tag, first_key=first_key)
        time.sleep(1)  # lets the warm-up's last requests land before the jobs are counted
        print(f"  {target.name}: measuring {options.seconds} s", flush=True)
        jobs_before = count_jobs(options.database_url)
        before = snapshot(server_group=server.pid, helper_pids=helper_pids(options))
        run_tag = _tag(f"{target.name}-run")
        stats = run_wrk(wrk, options, target, seconds=options.seconds, tag=run_tag, first_key=first_key)
        cpu = cpu_use_between(before, snapshot(server_group=server.pid, helper_pids=helper_pids(options)))
    # Counted after gunicorn stopped, so requests still in flight when wrk stopped have landed.
    jobs_stored = count_jobs(options.database_url) - jobs_before
    return Result(
        target=target.name,
        requests=stats["requests"],
        seconds=stats["duration_us"] / 1e6,
        p50_ms=stats["p50_us"] / 1000,
        p99_ms=stats["p99_us"] / 1000,
        non_202=stats["unexpected"],
        socket_errors=stats["connect"] + stats["read"] + stats["write"] + stats["timeout"],
        jobs_stored=jobs_stored,
        server_cpu_ms=cpu.server_seconds * 1000 / max(stats["requests"], 1),
        others_share=cpu.others_share,
    )


# --- Report ----------------------------------------------------------------------------


def _print_verdict(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<16}{value:>11}   target {target:<10}{'PASS' if ok else 'FAIL'}")


def print_header(options: Options) -> None:
    print(
        f"NotifyHub accept path: POST {ACCEPT_PATH}\n"
        f"  load: wrk -t{options.wrk_threads} -c{options.connections}, {options.seconds} s measured after "
        f"{options.warmup_seconds} s warm-up, {options.rounds} rounds, {options.key_count} Startup keys\n"
        f"  servers: gunicorn.conf.py, {gunicorn_shape()}, access log off, "
        f"one server at a time\n",
        flush=True,
    )


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%}"


ROW_HEADER = (
    f"{'round':<7}{'target':<8}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}{'requests':>10}"
    f"{'jobs stored':>13}{'cpu ms/req':>12}{'other load':>12}"
)


def _print_row(label: str, row: Result) -> None:
    print(
        f"{label:<7}{row.target:<8}{row.rps:>10.1f}{row.p50_ms:>9.1f}{row.p99_ms:>9.1f}{row.errors:>8}"
        f"{row.requests:>10}{row.jobs_stored:>13}{row.server_cpu_ms:>12.2f}{_percent(row.others_share):>12}"
    )


def _print_median_row(rows: list[Result]) -> None:
    """Medians of the rates, latencies and CPU; totals of the counts; the busiest round's other load."""
    shares = [row.others_share for row in rows if row.others_share is not None]
    print(
        f"{'median':<7}{rows[0].target:<8}{median(row.rps for row in rows):>10.1f}"
        f"{median(row.p50_ms for row in rows):>9.1f}{median(row.p99_ms for row in rows):>9.1f}"
        f"{sum(row.errors for row in rows):>8}{sum(row.requests for row in rows):>10}"
        f"{sum(row.jobs_stored for row in rows):>13}{median(row.server_cpu_ms for row in rows):>12.2f}"
        f"{_percent(max(shares) if shares else None):>12}"
    )


def print_report(rounds: list[tuple[Result, Result]], options: Options) -> None:
    """One row per server and round, the medians, then the verdicts on the medians.

    Each round's ratio compares an app run with the floor run right after it, so a slow spell
    of the machine that spans both cancels out; the verdict takes the median of those ratios.
    """
    print(ROW_HEADER)
    for number, (app, floor) in enumerate(rounds, start=1):
        _print_row(str(number), app)
        _print_row(str(number), floor)
    apps, floors = [app for app, _ in rounds], [floor for _, floor in rounds]
    if len(rounds) > 1:
        _print_median_row(apps)
        _print_median_row(floors)
    ratios = [app.rps / floor.rps if floor.rps else 0.0 for app, floor in rounds]
    share = median(ratios)
    p99 = median(app.p99_ms for app in apps)
    errors = sum(row.errors for row in apps + floors)
    print()
    _print_verdict("app/floor req/s", f"{share:.1%}", f">= {MIN_FLOOR_SHARE:.0%}", share >= MIN_FLOOR_SHARE)
    if len(rounds) > 1:
        print(f"  per round: {', '.join(f'{ratio:.1%}' for ratio in ratios)} (the verdict takes the median)")
    _print_verdict("app p99", f"{p99:.1f} ms", f"< {MAX_P99_MS:.0f} ms", p99 < MAX_P99_MS)
    _print_verdict("errors", str(errors), "0", errors == 0)
    floor_cpu = median(floor.server_cpu_ms for floor in floors)
    if floor_cpu:
        cost = median(app.server_cpu_ms for app in apps) / floor_cpu
        print(f"  gunicorn CPU per request: app {cost:.1f}x the floor's (not a target; explains the req/s ratio)")
    for row in apps + floors:
        if row.errors:
            print(f"  {row.target}: {row.non_202} responses other than 202, {row.socket_errors} socket errors/timeouts")
    if max(app.rps for app in apps) > options.max_rps:
        print(f"  note: app ran above --max-rps {options.max_rps}; raise it so keys stay under the rate limit")
    for row in apps + floors:
        if (row.others_share or 0) > BUSY_WARNING:
            print(
                f"  note: other processes used {row.others_share:.0%} of the CPUs during a {row.target} run, "
                "so its req/s are low and that round's ratio is off; re-run on a quiet machine"
            )


# --- Main ------------------------------------------------------------------------------


def run(options: Options) -> None:
    wrk = require_wrk()
    export_environment(options)
    print_header(options)
    print(f"  preparing: database {database_name(options.database_url)}, {options.key_count} accounts", flush=True)
    prepare(options)
    api_key = KEYS_FILE.read_text().split()[0]
    app = Target("app", "notifyhub.settings", options.app_port)
    floor = Target("floor", "bench.floor_settings", options.floor_port)
    rounds = []
    try:
        for index in range(options.rounds):
            print(f"  round {index + 1} of {options.rounds}", flush=True)
            rounds.append(
                (
                    measure(wrk, options, app, api_key, round_index=index),
                    measure(wrk, options, floor, api_key, round_index=index),
                )
            )
    finally:
        # No worker runs during the bench: drop the queued Celery messages (and rate-limit state) it left.
        flush_redis(options.redis_url)
    print()
    print_report(rounds, options)


def main() -> int:
    options = parse_options(sys.argv[1:])
    return bench_main(lambda: run(options))


if __name__ == "__main__":
    sys.exit(main())
