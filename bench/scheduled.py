"""scheduled: scheduled sends (``sendAt``) going out at their time, and what waiting ones cost the dispatcher.

Burst: webhooks all scheduled for the same second, stored before it (some through the API with ``sendAt``, the rest
through its service in one transaction), then beat's dispatcher and the delivery bench's workers send them; from that
second to each job's arrival at ``receiver.py``. Spread: pending sends scheduled over the next 24 hours, seeded in
SQL, then the dispatcher's tick with nothing due, timed in this process, and its query's plan.
bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import math
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench import delivery
from bench.common import (
    ACCEPT_PATH,
    API_HEADERS,
    REQUESTS_PER_KEY,
    BenchError,
    Proc,
    Sample,
    Seeded,
    celery_beat,
    column,
    gunicorn,
    log,
    make_tls,
    open_loop,
    option,
    own_services,
    percentile,
    run_sql,
    seed_accounts,
    table,
    timed,
    verdict,
    wait_for_quiet,
)
from bench.delivery import PAYLOAD, Delivery

HELP = "scheduled sends: a burst at one second, and the dispatcher's tick with a day of them waiting"
# The issue: every job of the burst goes out within 10 s of its time: taken by the dispatcher and its task sent.
# Its arrival then waits for the workers' own rate, which the delivery bench measures.
MAX_LAST_SECONDS = 10.0
MAX_TICK_P50_MS = 5.0
# Seconds the stores must end before the instant, so the workers are idle and the clock starts on a quiet machine.
MIN_LEAD_LEFT = 3.0
API_RATE = 1000.0  # the API part's sends a second: more than gunicorn answers here, so they go as fast as it does
API_SENDERS = 16
# The spread starts this far ahead, so none falls due while the bench times the ticks.
SPREAD_FIRST_SECONDS = 300
SPREAD_SECONDS = 24 * 3600
TAKEN_POLL_SECONDS = 0.05
# The dispatcher's line after each run (notifications/engine/processing.py), in the workers' logs; the sweeper's
# runs end in the same dispatch and write it too.
DISPATCHED = re.compile(r"Dispatcher sent (\d+) job")
WARM_TICKS = 5  # the first calls build the ORM's query and find the connection cold
BURST_COLUMNS = (
    "taken s>8.2f|tasks>7|first s>8.2f|p50 s>8.2f|p99 s>8.2f|last s>8.2f|in 10 s>12|arrived>12|dup>5|early>6"
    "|deliv/s>9.1f|wkr ms>8.2f|pg ms>7.2f|busy>6.0%|before>7.0%|sig>7"
)
TICK_COLUMNS = "jobs table<44|ticks>7|p50 ms>9.3f|p99 ms>9.3f|max ms>9.3f|sent>6"
# The due query's read of the dispatcher's index, as EXPLAIN names it: the planner takes a bitmap scan of the same
# index when it expects few rows due, and either reads the due rows' entries alone.
DUE_SCAN = re.compile(r"(Index Only Scan|Index Scan|Bitmap Index Scan) (?:using|on) job_requeue_due\b")
SCAN_NAMES = {"Index Scan": "index", "Index Only Scan": "index only", "Bitmap Index Scan": "bitmap index"}

# The spread: pending webhook jobs as the API stores a scheduled send, due at random over the next day, round-robin
# over the accounts; scheduled_for, locked_until and requeue_at all the job's time.
SPREAD_SQL = """
WITH drawn AS (
    SELECT g, now() + make_interval(secs => %(first)s + random() * %(span)s) AS due
    FROM generate_series(1, %(jobs)s) AS g
)
INSERT INTO {table} ({columns})
SELECT {values} FROM drawn
"""
SPREAD_VALUES = {
    "id": "gen_random_uuid()",
    "account": "(%(accounts)s::bigint[])[1 + mod(g, %(count)s)]",
    "type": "%(type)s",
    "status": "%(status)s",
    "priority": "%(priority)s",
    "payload": "%(payload)s",
    "destination": "%(destination)s",
    "attempts": "0",
    "max_attempts": "%(max_attempts)s",
    "claims": "0",
    "created_at": "now()",
    "scheduled_for": "due",
    "locked_until": "due",
    "requeue_at": "due",
}


@dataclass(frozen=True)
class Burst:
    instant: datetime  # the second every job was scheduled for
    jobs: int
    through_api: int
    store_seconds: float
    lead_left: float  # seconds from the stores' end to the instant
    taken: float  # seconds from the instant until dispatchers had taken every job (NaN: some never were)
    tasks: int | None  # the tasks the dispatchers said they sent meanwhile (None: no line found)
    offsets: list[float]  # each arrived job's first arrival, in seconds after the instant (negative: early)
    duplicates: int
    signatures: tuple[int, int]
    cpu: dict[str, float]  # CPU seconds from the instant to the last arrival: worker, postgres, receiver
    busy: float  # share of the CPUs busy over the same time
    before: float  # the same, in the second before the instant

    @property
    def last(self) -> float:
        return max(self.offsets, default=math.nan)

    @property
    def on_time(self) -> int:
        return sum(0 <= offset <= MAX_LAST_SECONDS for offset in self.offsets)

    @property
    def early(self) -> int:
        return sum(offset < 0 for offset in self.offsets)

    def row(self) -> tuple[Any, ...]:
        first, arrived = min(self.offsets, default=math.nan), len(self.offsets)
        spread = first, percentile(self.offsets, 0.50), percentile(self.offsets, 0.99), self.last
        rate = arrived / (self.last - first) if arrived > 1 and self.last > first else math.nan
        dispatch = self.taken, "?" if self.tasks is None else self.tasks
        counts = f"{self.on_time}/{self.jobs}", f"{arrived}/{self.jobs}", self.duplicates, self.early, rate
        cpu = (self.cpu.get(name, 0.0) * 1000 / max(arrived, 1) for name in ("worker", "postgres"))
        return *dispatch, *spread, *counts, *cpu, self.busy, self.before, "{}/{}".format(*self.signatures)


@dataclass(frozen=True)
class Plan:
    sql: str
    params: Any
    lines: list[str]

    @property
    def nodes(self) -> list[str]:
        """Each node's name and what it reads ("Index Scan using job_requeue_due on notifications_job"), top first."""
        return [line.split("(cost=")[0].strip().removeprefix("->").strip() for line in self.lines if "(cost=" in line]

    @property
    def buffers(self) -> str:
        """The top node's buffers, its children's included; "none" when it touched none (EXPLAIN then leaves the line
        out, and the next one would be the planning's)."""
        executed = itertools.takewhile(lambda line: not line.startswith("Planning"), self.lines)
        return next((line.strip().removeprefix("Buffers: ") for line in executed if "Buffers:" in line), "none")

    @property
    def scan(self) -> str:
        """How it reads the jobs table: "index", "index only" or "bitmap index" (a scan of the dispatcher's index),
        "seq scan" (the whole table), else "not used"."""
        from notifications.models import Job

        if any(f"Seq Scan on {Job._meta.db_table}" in line for line in self.lines):
            return "seq scan"
        found = (DUE_SCAN.search(line) for line in self.lines)
        return next((SCAN_NAMES[match.group(1)] for match in found if match), "not used")


@dataclass(frozen=True)
class Ticks:
    """The dispatcher's ticks in one state of the table."""

    state: str
    ms: list[float]  # each tick's
    sent: int  # tasks they sent (none: nothing is due)
    plans: list[Plan]  # the SELECTs of one more tick, under EXPLAIN (ANALYZE, BUFFERS)

    def row(self) -> tuple[Any, ...]:
        spread = percentile(self.ms, 0.5), percentile(self.ms, 0.99), max(self.ms, default=math.nan)
        return self.state, len(self.ms), *spread, self.sent


@dataclass(frozen=True)
class Spread:
    jobs: int
    seconds: dict[str, float]  # per step: jobs, vacuum
    states: list[Ticks]  # before seeding them, then with them waiting


# --- Burst: one second's sends -------------------------------------------------------------------------


def pick_instant(lead: float) -> tuple[datetime, float]:
    """The first whole second at least ``lead`` s from now, in UTC and on the receiver's clock (``time.monotonic()``:
    the two clocks read back to back, so arrivals can be set against a time the jobs hold as a date)."""
    wall, monotonic = time.time(), time.monotonic()
    second = math.ceil(wall + lead)
    return datetime.fromtimestamp(second, UTC), monotonic + (second - wall)


def store_through_api(d: Delivery, instant: datetime, count: int) -> list[str]:
    """``count`` sends with ``sendAt`` through gunicorn, as fast as API_SENDERS threads get answers, over the keys in
    turn; any answer but 202 stops the bench (the burst would lack those jobs)."""
    body = json.dumps({"url": d.url, "payload": PAYLOAD, "sendAt": instant.isoformat()}).encode()
    stored: list[str] = []  # appended to by every sender thread (list.append is atomic)

    def send(connection: http.client.HTTPConnection, number: int, _due: float) -> str:
        headers = {**API_HEADERS, "X-API-Key": d.accounts[number % len(d.accounts)].api_key}
        connection.request("POST", ACCEPT_PATH, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()
        if response.status != 202:
            return f"{response.status} {answer[:200]!r}"
        stored.append(json.loads(answer)["data"]["jobId"])
        return ""

    _, errors = open_loop(d.args.port, API_RATE, count, API_SENDERS, send)
    if errors:
        raise BenchError(f"the API refused scheduled sends: {dict(errors.most_common(3))}")
    return stored


def store_through_service(d: Delivery, instant: datetime, count: int, first: int) -> list[str]:
    """``count`` sends through the accept path's service with ``send_at``, in one transaction, over the accounts in
    turn from ``first``: what the API stores without its HTTP, so the burst is stored in seconds."""
    from django.db import transaction

    from notifications.services import webhook_job_create

    accounts = [d.accounts[(first + number) % len(d.accounts)].account for number in range(count)]
    with transaction.atomic():
        return [
            str(webhook_job_create(account=account, url=d.url, payload=PAYLOAD, send_at=instant).id)
            for account in accounts
        ]


def check_stored(jobs: int, instant: datetime) -> None:
    """Every job is a scheduled send waiting for ``instant``, as the issue has the API store it: pending, its
    scheduled time, lock and requeue time all that second. Otherwise the clock would measure something else."""
    from notifications.models import Job, JobStatus

    at = {"scheduled_for": instant, "locked_until": instant, "requeue_at": instant}
    waiting = Job.objects.filter(status=JobStatus.PENDING, **at).count()
    if waiting != jobs:
        raise BenchError(f"{waiting} of {jobs} jobs stored as scheduled sends for {instant:%H:%M:%S}")


def sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))


def wait_taken(instant: datetime, give_up: float) -> float:
    """Polls until no job waits any more with ``instant`` as its requeue time (a dispatcher's statement moves the
    rows it takes on, before it publishes them); returns ``time.monotonic()`` then, NaN if some still wait at
    ``give_up``. One indexed lookup a poll."""
    from notifications.models import Job

    waiting = Job.objects.filter(requeue_at=instant)
    while time.monotonic() < give_up:
        if not waiting.exists():
            return time.monotonic()
        time.sleep(TAKEN_POLL_SECONDS)
    return math.nan


def tasks_dispatched(procs: list[Proc], offsets: list[int]) -> int | None:
    """The jobs the workers' dispatcher runs said they sent since their logs were ``offsets`` long; None if none
    said so (a log level above INFO). More than the burst's jobs: runs overlapped and sent some twice."""
    lines = []
    for proc, offset in zip(procs, offsets, strict=True):
        with proc.log_path.open("rb") as log_file:
            log_file.seek(offset)
            lines += DISPATCHED.findall(log_file.read().decode("utf-8", "replace"))
    return sum(int(count) for count in lines) if lines else None


def burst(args: argparse.Namespace, accounts: list[Seeded]) -> Burst:
    # What delivery.py's functions read from the arguments beyond ours: no other revision's workers.
    d_args = argparse.Namespace(**vars(args), against="")
    env = dict(delivery.APP_WORKER_ENV)
    with delivery.started_receiver(args.receiver_port) as (receiver, client):
        d = Delivery(d_args, env, receiver, client, accounts, floor_secret="")
        with (
            gunicorn("gunicorn-scheduled", args.port, **env) as web,
            delivery.workers(d, "app") as procs,
            celery_beat("beat", env=env) as beat,
        ):
            delivery.warmed_up(d, procs, delivery.enqueue(d, "app", max(50, 4 * args.concurrency * args.processes)))
            instant, instant_at = pick_instant(args.lead)
            through_api = min(args.api_jobs, args.jobs)
            log(f"scheduled: storing {args.jobs:,} webhooks for {instant:%H:%M:%S} UTC ({through_api} via the API)")
            stored_from = time.monotonic()
            ids = store_through_api(d, instant, through_api)
            ids += store_through_service(d, instant, args.jobs - len(ids), len(ids))
            stored_at = time.monotonic()
            check_stored(len(ids), instant)
            if instant_at - stored_at < MIN_LEAD_LEFT:
                raise BenchError(
                    f"storing took {stored_at - stored_from:.1f} s, ending {instant_at - stored_at:.1f} s before the "
                    f"instant; give it more --lead than {args.lead:g} s"
                )
            for proc in (*procs, beat):
                proc.check_alive()
            sources = d.sources(procs)
            sleep_until(instant_at - 1)
            idle = Sample.take(**sources)
            log_sizes = [proc.log_path.stat().st_size for proc in procs]
            sleep_until(instant_at)
            start = Sample.take(**sources)
            taken_at = wait_taken(instant, instant_at + delivery.STALL_SECONDS)
            dump = client.wait_for(ids, stall_seconds=delivery.STALL_SECONDS)
            end = Sample.take(**sources)
            tasks = tasks_dispatched(procs, log_sizes)
            for proc in (web, *procs, beat):
                proc.check_alive()
    first = dump.first_arrivals(ids)
    if not first:
        raise BenchError(f"none of the scheduled jobs arrived; see {beat.log_path} and {procs[0].log_path}")
    return Burst(
        instant=instant,
        jobs=len(ids),
        through_api=through_api,
        store_seconds=stored_at - stored_from,
        lead_left=instant_at - stored_at,
        taken=taken_at - instant_at,
        tasks=tasks,
        offsets=[arrival - instant_at for arrival in first.values()],
        duplicates=dump.duplicates(ids),
        signatures=d.signatures(dump, "app"),
        cpu=end.cpu_since(start),
        busy=end.busy_since(start),
        before=start.busy_since(idle),
    )


def report_burst(args: argparse.Namespace, b: Burst) -> None:
    from django.conf import settings

    print(
        f"\nburst: {b.jobs:,} webhooks scheduled for {b.instant:%H:%M:%S} UTC ({b.through_api:,} through the API with "
        f"sendAt, {b.jobs - b.through_api:,} through webhook_job_create in one transaction), stored in "
        f"{b.store_seconds:.1f} s, {b.lead_left:.1f} s before it; beat dispatching every "
        f"{settings.JOB_DISPATCH_INTERVAL_SECONDS} s, {args.processes} * --pool {args.pool} --concurrency "
        f"{args.concurrency} workers; seconds after it"
    )
    table(BURST_COLUMNS, [b.row()])
    print()
    arrived = len(b.offsets)
    verdict(
        "every job sent out after its time",
        f"{b.taken:.2f} s",
        f"<= {MAX_LAST_SECONDS:g} s",
        b.taken <= MAX_LAST_SECONDS,
    )
    tasks = "?" if b.tasks is None else f"{b.tasks:,}"
    print(
        f"  the last arrival {b.last:.2f} s after it: {arrived:,} deliveries at the workers' rate; {tasks} tasks "
        f"published for {b.jobs:,} jobs"
    )
    verdict("arrivals before their time", str(b.early), "0", b.early == 0)
    delivery.every_job_verdict(arrived, b.jobs, b.duplicates, [b.signatures])
    if b.before > 0.15:
        print("  note: other processes kept the CPUs busy before the instant (column 'before'); re-run when quiet")


# --- Spread: a day's sends waiting, the dispatcher's tick ----------------------------------------------


def seed_spread(jobs: int, accounts: list[Seeded], url: str) -> dict[str, float]:
    """``jobs`` scheduled sends in one statement, then VACUUM (ANALYZE): the planner's statistics and visibility map
    of a table in steady state, as autovacuum keeps a live one. Returns each step's seconds."""
    from core.sql import db_value
    from core.sql import table as sql_table
    from notifications.destination import job_destination
    from notifications.models import MAX_ATTEMPTS, Job, JobStatus, JobType, Priority

    stored = {"url": url, "method": "POST", "headers": {}, "payload": PAYLOAD}  # as delivery.enqueue stores it
    statement = SPREAD_SQL.format(
        table=sql_table(Job),
        columns=", ".join(column(Job, name) for name in SPREAD_VALUES),
        values=", ".join(SPREAD_VALUES.values()),
    )
    params = {
        "first": SPREAD_FIRST_SECONDS,
        "span": SPREAD_SECONDS - SPREAD_FIRST_SECONDS,
        "jobs": jobs,
        "accounts": [seeded.account.pk for seeded in accounts],
        "count": len(accounts),
        "type": JobType.WEBHOOK.value,
        "status": JobStatus.PENDING.value,
        "priority": Priority.NORMAL.value,
        "payload": db_value(Job, "payload", stored),
        "destination": job_destination(JobType.WEBHOOK, stored),
        "max_attempts": MAX_ATTEMPTS,
    }
    seconds: dict[str, float] = {}
    with timed("jobs", seconds):
        run_sql(statement, params)
    with timed("vacuum", seconds):
        run_sql(f"VACUUM (ANALYZE) {sql_table(Job)}")
    return seconds


def ticks(state: str, count: int) -> Ticks:
    """``count`` dispatcher ticks one after another (``jobs_dispatch()``, its query and round trip), after WARM_TICKS
    untimed, then one more whose SELECTs are recorded as it runs and run again under EXPLAIN (ANALYZE, BUFFERS)."""
    from django.db import connection

    from notifications.engine.processing import jobs_dispatch

    for _ in range(WARM_TICKS):
        jobs_dispatch()
    timings, sent = [], 0
    for _ in range(count):
        started = time.perf_counter()
        sent += jobs_dispatch()
        timings.append((time.perf_counter() - started) * 1000)
    statements: list[tuple[str, Any]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        jobs_dispatch()
    plans = []
    with connection.cursor() as cursor:
        for sql, params in statements:
            if sql.lstrip().upper().startswith("SELECT"):
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
                plans.append(Plan(sql, params, [line for (line,) in cursor.fetchall()]))
    return Ticks(state, timings, sent, plans)


def table_state() -> str:
    """What the jobs table holds: the finished jobs (a burst's, not yet vacuumed, with the dead row versions their
    updates left) and the unfinished ones."""
    from notifications.engine.store import UNFINISHED
    from notifications.models import Job

    unfinished = Job.objects.filter(status__in=UNFINISHED).count()
    return f"{Job.objects.count() - unfinished:,} finished, {unfinished:,} waiting"


def spread(args: argparse.Namespace, accounts: list[Seeded]) -> Spread:
    url = f"https://127.0.0.1:{args.receiver_port}/hooks/bench"
    wait_for_quiet(args.quiet_wait)
    states = [ticks(table_state(), args.ticks)]
    log(f"scheduled: seeding {args.spread_jobs:,} sends over the next 24 h")
    seconds = seed_spread(args.spread_jobs, accounts, url)
    wait_for_quiet(args.quiet_wait)
    states.append(ticks(f"{table_state()}, vacuumed", args.ticks))
    return Spread(args.spread_jobs, seconds, states)


def print_plans(state: Ticks) -> None:
    print(f"\nEXPLAIN (ANALYZE, BUFFERS): the SELECTs of one tick, {state.state}: {len(state.plans)}")
    for plan in state.plans:
        print(f"\n  {' '.join(plan.sql.split())}\n  params: {json.dumps(plan.params, default=str)}")
        print("".join(f"    {line}\n" for line in plan.lines), end="")
        print(f"  nodes: {' > '.join(plan.nodes)}; buffers: {plan.buffers}")


def report_spread(s: Spread) -> None:
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in s.seconds.items())
    print(
        f"\nspread: {s.jobs:,} pending sends scheduled at random from {SPREAD_FIRST_SECONDS // 60} min to 24 h ahead, "
        f"seeded in {sum(s.seconds.values()):.1f} s ({steps})"
    )
    print("dispatcher ticks with nothing due, one after another in this process (jobs_dispatch(), round trip included)")
    table(TICK_COLUMNS, [state.row() for state in s.states])
    for state in s.states:
        print_plans(state)
    print()
    last = s.states[-1]
    scans = {plan.scan for plan in last.plans}
    read = "seq scan" if "seq scan" in scans else min(scans - {"not used"}, default="not used")
    ok = bool(last.plans) and "seq scan" not in scans and "not used" not in scans
    verdict("due query on job_requeue_due", read, "index", ok)
    p50 = percentile(last.ms, 0.5)
    verdict("dispatcher tick p50", f"{p50:.2f} ms", f"< {MAX_TICK_P50_MS:g} ms", p50 < MAX_TICK_P50_MS)
    if any(state.sent for state in s.states):
        print("  note: a tick found jobs due (column 'sent'): the timings include sending their tasks")


# --- The subcommand ------------------------------------------------------------------------------------


def options(parser: argparse.ArgumentParser) -> None:
    env = "scheduled"
    option(parser, "jobs", 10_000, "burst: webhooks scheduled for the same second", env=env)
    option(parser, "api-jobs", 500, "burst: of those, sent through the API (the rest: its service)", env=env)
    option(parser, "lead", 30.0, "burst: seconds from storing to the second they are due", env=env)
    option(parser, "spread-jobs", 100_000, "spread: pending sends scheduled over the next 24 h", env=env)
    option(parser, "ticks", 50, "spread: dispatcher ticks timed, before and after seeding them", env=env)
    option(parser, "pool", "threads", "worker pool", env=env, choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "worker concurrency", env=env)
    option(parser, "processes", 2, "worker processes side by side (one per core)", env=env)
    option(parser, "port", 8771, "gunicorn's port", env=env)
    option(parser, "receiver-port", 8743, "the HTTPS receiver's port", env=env)
    option(parser, "parts", "both", "burst, spread or both", env=env, choices=["both", "burst", "spread"])


def run(args: argparse.Namespace) -> None:
    parts = ("burst", "spread") if args.parts == "both" else (args.parts,)
    workers = f"{args.processes} * --pool {args.pool} --concurrency {args.concurrency}"
    described = {
        "burst": f"burst of {args.jobs:,} due in {args.lead:g} s, {workers}",
        "spread": f"spread of {args.spread_jobs:,} over a day",
    }
    log(f"scheduled: {'; '.join(described[part] for part in parts)}")
    make_tls()
    with own_services(args):
        from notifyhub.celery import app as celery_app

        celery_app.set_current()  # the app's publish uses the current Celery app
        direct_jobs = args.jobs + max(50, 4 * args.concurrency * args.processes)  # the burst and the warm-up
        count = max(40, math.ceil(args.api_jobs / REQUESTS_PER_KEY), math.ceil(direct_jobs / delivery.JOBS_PER_ACCOUNT))
        log(f"scheduled: seeding {count} Startup accounts")
        accounts = seed_accounts(count, prefix="scheduled", secrets=True)
        burst_run = burst(args, accounts) if "burst" in parts else None
        spread_run = spread(args, accounts) if "spread" in parts else None
    if burst_run:
        report_burst(args, burst_run)
    if spread_run:
        report_spread(spread_run)
