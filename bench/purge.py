"""purge: `manage.py purgejobs` deleting a million finished jobs while clients keep sending.

A million finished jobs older than the cutoff (three delivery logs each, and provider events on some) are seeded in
set-based SQL among jobs that must stay; gunicorn serves `POST /api/v1/notifications/webhook` at a steady rate, first
alone, then while purgejobs runs in a process of its own, as an operator starts it. bench/README.md says how to read
the report.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.common import (
    ACCEPT_PATH,
    API_HEADERS,
    REQUESTS_PER_KEY,
    ROOT,
    BenchError,
    Proc,
    Sample,
    children_cpu,
    column,
    command_cpu,
    gunicorn,
    log,
    option,
    own_services,
    percentile,
    run_sql,
    running,
    seed_accounts,
    table,
    timed,
    verdict,
    wait_for_quiet,
)

HELP = "purgejobs on a million old jobs while sends go on"
MAX_SEND_P99_MS = 100.0
SEND_BODY = json.dumps({"url": "https://hooks.example.com/in", "payload": {"event": "invoice.paid", "amount": 4200}})
SENDERS = 16  # client threads sharing the schedule, each on its own connection
SEND_COLUMNS = "phase<14|sent>8|202>8|errors>8|req/s>8.1f|p50 ms>9.1f|p99 ms>9.1f|max ms>9.1f|busy>7.0%"

# The jobs to purge: --jobs, finished (90% completed, 10% failed) between --older-than + 1 and twice that many days
# ago, 1 to 5 s after they were created, round-robin over the accounts, inserted in creation order. 60% email.
OLD_JOBS_SQL = """
WITH drawn AS (
    SELECT g, random() AS u, random() AS v,
           now() - (%(days)s + 1) * interval '1 day' - random() * %(days)s * interval '1 day' AS created_at
    FROM generate_series(1, %(jobs)s) AS g
)
INSERT INTO {table} ({columns})
SELECT {values} FROM drawn ORDER BY created_at
"""
OLD_JOB_VALUES = {
    "id": "gen_random_uuid()",
    "account": "(%(accounts)s::bigint[])[1 + mod(g, %(account_count)s)]",
    "type": "CASE WHEN v < 0.60 THEN 'email' ELSE 'webhook' END",
    "status": "CASE WHEN u < 0.90 THEN 'completed' ELSE 'failed' END",
    "priority": "5",
    "payload": "CASE WHEN v < 0.60 THEN %(email)s ELSE %(webhook)s END",
    "attempts": "3",
    "max_attempts": "3",
    "claims": "3",
    "error_message": "CASE WHEN u >= 0.90 THEN '503 Service Unavailable' END",
    "created_at": "created_at",
    "started_at": "created_at + interval '40 milliseconds'",
    "completed_at": "CASE WHEN u < 0.90 THEN created_at + (1 + 4 * u) * interval '1 second' END",
    "finished_at": "created_at + (1 + 4 * u) * interval '1 second'",
}
# What must stay: finished jobs of the last days, and unfinished jobs however old (a retry waiting, queued ones).
KEPT_JOBS_SQL = """
INSERT INTO {table} ({columns})
SELECT gen_random_uuid(), (%(accounts)s::bigint[])[1 + mod(g, %(account_count)s)], 'webhook',
       CASE WHEN g <= %(unfinished)s THEN 'processing' ELSE 'completed' END, 5, %(webhook)s, 1, 3, 1,
       CASE WHEN g <= %(unfinished)s THEN now() - 2 * %(days)s * interval '1 day'
            ELSE now() - random() * (%(days)s - 1) * interval '1 day' END,
       CASE WHEN g > %(unfinished)s THEN now() - random() * (%(days)s - 1) * interval '1 day' END
FROM generate_series(1, %(kept)s) AS g
"""
KEPT_JOB_FIELDS = ["id", "account", "type", "status", "priority", "payload", "attempts", "max_attempts", "claims"]
# A log for each attempt of every job in the table, the last one the outcome.
LOGS_SQL = """
INSERT INTO {log} ({columns})
SELECT gen_random_uuid(), j.{id}, a, CASE WHEN a = j.{attempts} AND j.{status} = 'completed' THEN 'success' ELSE
       'failed' END, CASE WHEN a = j.{attempts} AND j.{status} = 'completed' THEN NULL ELSE '503 Service Unavailable'
       END, CASE WHEN a = j.{attempts} AND j.{status} = 'completed' THEN 200 ELSE 503 END, 40, '',
       j.{created_at} + a * interval '1 second'
FROM {job} j CROSS JOIN generate_series(1, j.{attempts}) AS a
"""
LOG_FIELDS = ["id", "job", "attempt", "status", "error_message", "response_status", "duration_ms", "response_excerpt"]
# Provider events on the first --events email jobs: a delivery each, as the receivers store them.
EVENTS_SQL = """
INSERT INTO {event} ({columns})
SELECT j.{account}, j.{id}, 'SENDGRID', 'delivered', 'customer@example.com', j.{finished_at}, j.{id}::text, '{{}}',
       j.{finished_at}
FROM {job} j WHERE j.{type} = 'email' LIMIT %(events)s
"""
EVENT_FIELDS = ["account", "job", "provider", "type", "recipient", "occurred_at", "provider_event_id", "payload"]


@dataclass(frozen=True)
class Seeding:
    keys: list[str]
    old: int  # jobs the purge must delete
    kept: int  # jobs it must leave
    logs: int
    events: int
    seconds: dict[str, float]


def jobs_table() -> tuple[str, str, str]:
    """The job, delivery log and email event tables, quoted."""
    from core.sql import table
    from notifications.models import DeliveryLog, Job
    from webhooks_inbound.models import EmailEvent

    return table(Job), table(DeliveryLog), table(EmailEvent)


def seed(args: argparse.Namespace) -> Seeding:
    from core.sql import db_value
    from notifications.models import DeliveryLog, Job
    from webhooks_inbound.models import EmailEvent

    log(f"purge: seeding {args.jobs:,} finished jobs older than {args.older_than} days and {args.kept:,} to keep")
    # Enough keys that none nears the Startup limit at --rate.
    accounts = seed_accounts(max(args.accounts, math.ceil(args.rate * 60 / REQUESTS_PER_KEY)), prefix="purge")
    job, logs, events = jobs_table()
    email = {"to": "customer@example.com", "subject": "Your receipt", "body": "<p>Thanks for your order.</p>"}
    hook = {"event": "invoice.paid", "data": {"invoice": "in_1PZt7x2eZvKYlo2C", "amount": 4200}}
    webhook = {"url": "https://hooks.example.com/in", "method": "POST", "headers": {}, "payload": hook}
    params = {
        "jobs": args.jobs,
        "kept": args.kept,
        "unfinished": args.kept // 20,
        "days": args.older_than,
        "events": args.events,
        "accounts": [entry.account.pk for entry in accounts],
        "account_count": len(accounts),
        "email": db_value(Job, "payload", email),
        "webhook": db_value(Job, "payload", webhook),
    }
    seconds: dict[str, float] = {}
    with timed("jobs", seconds):
        names = ", ".join(column(Job, name) for name in OLD_JOB_VALUES)
        old = run_sql(OLD_JOBS_SQL.format(table=job, columns=names, values=", ".join(OLD_JOB_VALUES.values())), params)
        kept_columns = ", ".join(column(Job, name) for name in [*KEPT_JOB_FIELDS, "created_at", "finished_at"])
        kept = run_sql(KEPT_JOBS_SQL.format(table=job, columns=kept_columns), params)
    names = {name: column(Job, name) for name in ("id", "status", "created_at", "attempts")}
    with timed("logs", seconds):
        log_columns = ", ".join(column(DeliveryLog, name) for name in [*LOG_FIELDS, "created_at"])
        log_count = run_sql(LOGS_SQL.format(log=logs, columns=log_columns, job=job, **names))
    names.update({name: column(Job, name) for name in ("account", "finished_at", "type")})
    with timed("events", seconds):
        event_columns = ", ".join(column(EmailEvent, name) for name in [*EVENT_FIELDS, "received_at"])
        event_count = run_sql(EVENTS_SQL.format(event=events, columns=event_columns, job=job, **names), params)
    with timed("vacuum", seconds):  # a table in steady state, as a purge finds it after months of traffic
        for name in (job, logs, events):
            run_sql(f"VACUUM (ANALYZE) {name}")
    return Seeding([entry.api_key for entry in accounts], old, kept, log_count, event_count, seconds)


@dataclass(frozen=True)
class Sends:
    phase: str
    sent: int
    latencies_ms: list[float]  # from each request's due time to its answer read, 202s only
    errors: Counter[str]
    seconds: float  # the span of the due times
    busy: float  # share of the machine's CPUs busy meanwhile

    def row(self) -> tuple[Any, ...]:
        ms = self.latencies_ms
        quantiles = percentile(ms, 0.50), percentile(ms, 0.99), max(ms, default=math.nan)
        rate = self.sent / self.seconds if self.seconds else math.nan
        return self.phase, self.sent, len(ms), self.errors.total(), rate, *quantiles, self.busy


@dataclass(frozen=True)
class Request:
    due: float  # when the open-loop schedule sent it (time.monotonic)
    latency_ms: float  # to the answer read; NaN when none came
    outcome: str  # "202", "status 4xx/5xx" or the exception's name


class SendLoad:
    """POSTs sends at ``--rate`` a second from start until stopped, open loop: request i is due at start + i / rate
    whatever happened before it, shared by SENDERS threads, each on its own connection."""

    def __init__(self, args: argparse.Namespace, keys: list[str]) -> None:
        self.port, self.rate, self.keys = args.port, args.rate, keys
        self.requests: list[Request] = []
        self.lock, self.stop, self.start = threading.Lock(), threading.Event(), time.monotonic() + 0.1
        self.numbers = iter(range(10**9))
        self.threads = [threading.Thread(target=self.sender, daemon=True) for _ in range(SENDERS)]
        for thread in self.threads:
            thread.start()

    def sender(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while True:
            with self.lock:
                number = next(self.numbers)
            due = self.start + number / self.rate
            time.sleep(max(0.0, due - time.monotonic()))
            if self.stop.is_set():
                break
            headers = {**API_HEADERS, "X-API-Key": self.keys[number % len(self.keys)]}
            try:
                connection.request("POST", ACCEPT_PATH, body=SEND_BODY, headers=headers)
                response = connection.getresponse()
                response.read()
                request = Request(due, (time.monotonic() - due) * 1000, str(response.status))
            except (OSError, http.client.HTTPException) as error:
                # Not retried: a retry could accept the job twice. A fresh connection serves the next request.
                request = Request(due, math.nan, type(error).__name__)
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            with self.lock:
                self.requests.append(request)
        connection.close()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def between(self, phase: str, first: float, last: float, busy: float) -> Sends:
        """The requests due from ``first`` to ``last``."""
        chosen = [request for request in self.requests if first <= request.due <= last]
        errors = Counter(request.outcome for request in chosen if request.outcome != "202")
        latencies = [request.latency_ms for request in chosen if request.outcome == "202"]
        return Sends(phase, len(chosen), latencies, errors, last - first, busy)


@dataclass(frozen=True)
class PurgeRun:
    seconds: float
    cpu: dict[str, float]  # CPU seconds of purgejobs and of PostgreSQL (every backend) over the run
    output: str  # what purgejobs printed: its progress lines, then its totals
    left: dict[str, int]  # what the tables hold afterwards

    @property
    def deleted(self) -> dict[str, int]:
        """The totals purgejobs printed, by what they count."""
        totals = re.search(r"Deleted ([\d,]+) job\(s\).*?(?:, with (.*))?\.$", self.output, re.MULTILINE)
        if totals is None:
            return {}
        counted = {"jobs": int(totals[1].replace(",", ""))}
        for part in (totals[2] or "").split(", "):
            if part:
                number, name = part.split(" ", 1)
                counted[name] = int(number.replace(",", ""))
        return counted


def count(statement: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement)
        return int(cursor.fetchone()[0])


def leftovers(args: argparse.Namespace) -> dict[str, int]:
    """What the purge left: old finished jobs (none should be), the seeded jobs to keep, logs and events."""
    job, logs, events = jobs_table()
    finished_at, status = column_of("finished_at"), column_of("status")
    cutoff = f"now() - interval '{args.older_than} days'"
    return {
        "old finished jobs": count(f"SELECT count(*) FROM {job} WHERE {finished_at} < {cutoff}"),
        "kept jobs": count(f"SELECT count(*) FROM {job} WHERE {status} IN ('completed', 'processing')"),
        "delivery logs": count(f"SELECT count(*) FROM {logs}"),
        "email events": count(f"SELECT count(*) FROM {events}"),
    }


def column_of(name: str) -> str:
    from notifications.models import Job

    return column(Job, name)


def purge_during_sends(args: argparse.Namespace, keys: list[str], web: Proc) -> tuple[PurgeRun, Sends, Sends]:
    """Sends alone for --alone seconds, then purgejobs in a process of its own, as an operator starts it, while the
    sends go on; they stop when it ends."""
    sources = {"purgejobs": children_cpu, "postgres": lambda: command_cpu("postgres"), "gunicorn": web.cpu}
    start = Sample.take(**sources)
    load = SendLoad(args, keys)
    try:
        time.sleep(args.alone)
        alone_end = Sample.take(**sources)
        log(f"purge: purgejobs --older-than {args.older_than}, sends going on")
        command = [sys.executable, "manage.py", "purgejobs", "--older-than", str(args.older_than)]
        with running("purgejobs", command, cwd=ROOT) as purge:
            status = purge.process.wait()
        end = Sample.take(**sources)
    finally:
        load.finish()
    if status != 0:
        raise BenchError(f"purgejobs exited with status {status}; see {purge.log_path}")
    alone = load.between("alone", load.start, alone_end.at, busy=alone_end.busy_since(start))
    during = load.between("during purge", alone_end.at, end.at, busy=end.busy_since(alone_end))
    output = purge.log_path.read_text().rsplit("\n=== ", 1)[-1]
    run = PurgeRun(end.at - alone_end.at, end.cpu_since(alone_end), output, leftovers(args))
    return run, alone, during


def report(args: argparse.Namespace, seeding: Seeding, run: PurgeRun, sends: list[Sends]) -> None:
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in seeding.seconds.items())
    print(
        f"\npurge: seeded {seeding.old:,} jobs that finished more than {args.older_than} days ago "
        f"({seeding.logs - seeding.kept:,} delivery logs, {seeding.events:,} email events) and {seeding.kept:,} to "
        f"keep, in {sum(seeding.seconds.values()):.1f} s ({steps})"
    )
    print(f"purge: {args.rate:g} sends a second through the API, {args.alone:g} s alone, then while purgejobs ran\n")
    table(SEND_COLUMNS, [load.row() for load in sends])
    deleted = run.deleted
    jobs = deleted.get("jobs", 0)
    rows = sum(deleted.values())
    cpu = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in run.cpu.items())
    print(
        f"\npurgejobs: {jobs:,} jobs and {rows - jobs:,} rows under them deleted in {run.seconds:.1f} s: "
        f"{jobs / run.seconds:,.0f} jobs/s ({rows / run.seconds:,.0f} rows/s)\n"
        f"  CPU meanwhile: {cpu} (PostgreSQL: every backend, the sends' included)"
    )
    print(f"  left: {', '.join(f'{count:,} {name}' for name, count in run.left.items())}")
    for errors in (load.errors for load in sends if load.errors):
        print(f"  errors: {dict(errors)}")
    print()
    during = sends[-1]
    p99 = percentile(during.latencies_ms, 0.99)
    verdict("sends p99 during the purge", f"{p99:.1f} ms", f"< {MAX_SEND_P99_MS:.0f} ms", p99 < MAX_SEND_P99_MS)
    verdict("send errors during the purge", str(during.errors.total()), "0", not during.errors)
    expected = {"old finished jobs": 0, "kept jobs": seeding.kept, "delivery logs": seeding.kept, "email events": 0}
    verdict("old jobs gone, the rest kept", "yes" if run.left == expected else "NO", "all", run.left == expected)


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "jobs", 1_000_000, "finished jobs older than the cutoff, three delivery logs each", env="purge")
    option(parser, "kept", 20_000, "jobs the purge must leave: recent finished ones, 5% old unfinished", env="purge")
    option(parser, "events", 100_000, "email events on the old email jobs", env="purge")
    option(parser, "accounts", 40, "accounts sharing the jobs, whose keys send", env="purge")
    option(parser, "older-than", 90, "purgejobs --older-than DAYS", env="purge")
    option(parser, "rate", 50.0, "sends a second through the API", env="purge")
    option(parser, "alone", 10.0, "seconds of sends before the purge starts", env="purge")
    option(parser, "warmup", 3.0, "warm-up seconds of sends, unmeasured", env="purge")
    option(parser, "port", 8771, "gunicorn's port", env="purge")


def run(args: argparse.Namespace) -> None:
    with own_services(args):
        seeding = seed(args)
        with gunicorn("gunicorn-purge", args.port) as web:
            warm_up(args, seeding.keys)
            wait_for_quiet(args.quiet_wait)
            log(f"purge: sends at {args.rate:g}/s, {args.alone:g} s alone first")
            purged, alone, during = purge_during_sends(args, seeding.keys, web)
    report(args, seeding, purged, [alone, during])


def warm_up(args: argparse.Namespace, keys: list[str]) -> None:
    """Every gunicorn worker imports lazily and opens its connections on its first requests."""
    load = SendLoad(args, keys)
    time.sleep(args.warmup)
    load.finish()
    if not any(request.outcome == "202" for request in load.requests):
        outcomes = Counter(request.outcome for request in load.requests)
        raise BenchError(f"no send was accepted during the warm-up: {dict(outcomes)}; see var/bench/gunicorn-purge.log")
