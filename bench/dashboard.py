"""dashboard: what an account holder reads, with a million jobs of their own among a million of others.

Three GETs, one at a time, against gunicorn: the daily figures and the failed jobs through the API (API key), and the
first page of the HTML jobs page (a signed-in session). Then EXPLAIN (ANALYZE, BUFFERS) of every SELECT each runs.
bench/README.md says how it seeds and how to read it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from bench.common import (
    PROXY_HEADERS,
    BenchError,
    Proc,
    column,
    gunicorn,
    log,
    one_request,
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

HELP = "the holder's reads with a million jobs, one by one"
MAX_P99_MS = 50.0
COLUMNS = "endpoint<18|path<40|requests>10|p50 ms>9.1f|p99 ms>9.1f|max ms>9.1f"

# The seeded jobs: the first --jobs go to the big account, the rest round-robin to the others; created at random over
# the last 90 days, inserted in creation order as a live table fills. Status: 90% completed, 7% failed, 2% pending,
# 1% processing; 60% email, 40% webhook. A finished job ended 1 to 5 s after it was created, after 1 to 3 attempts
# (3 for a failure: it failed for good); an unfinished one has its sweeper due time, as the app leaves it.
JOBS_SQL = """
WITH drawn AS (
    SELECT CASE WHEN g <= %(big)s THEN 1 ELSE 2 + mod(g, %(others)s) END AS slot,
           random() AS u, random() AS v, random() AS w, now() - random() * interval '90 days' AS created_at
    FROM generate_series(1, %(total)s) AS g
), jobs AS (
    SELECT slot, created_at, created_at + (1 + 4 * w) * interval '1 second' AS ended_at,
           CASE WHEN u < 0.90 THEN 'completed' WHEN u < 0.97 THEN 'failed'
                WHEN u < 0.99 THEN 'pending' ELSE 'processing' END AS status,
           CASE WHEN v < 0.60 THEN 'email' ELSE 'webhook' END AS type,
           CASE WHEN u < 0.90 THEN 1 + (w > 0.95)::int + (w > 0.99)::int WHEN u < 0.97 THEN 3
                WHEN u < 0.99 THEN 0 ELSE 1 END AS tries
    FROM drawn
)
INSERT INTO {table} ({columns})
SELECT {values} FROM jobs ORDER BY created_at
"""
# Each seeded job's columns by field name, as SQL over a row of JOBS_SQL's `jobs`.
JOB_VALUES = {
    "id": "gen_random_uuid()",
    "account": "(%(accounts)s::bigint[])[slot]",
    "type": "type",
    "status": "status",
    "priority": "%(priority)s",
    "payload": "CASE type WHEN 'email' THEN %(email)s ELSE %(webhook)s END",
    "attempts": "tries",
    "max_attempts": "%(max_attempts)s",
    "claims": "tries",
    "error_message": "CASE status WHEN 'failed' THEN %(error)s END",
    "created_at": "created_at",
    "started_at": "CASE WHEN status <> 'pending' THEN created_at + interval '40 milliseconds' END",
    "completed_at": "CASE status WHEN 'completed' THEN ended_at END",
    "finished_at": "CASE WHEN status IN ('completed', 'failed') THEN ended_at END",
    "requeue_at": "CASE WHEN status IN ('pending', 'processing') THEN created_at + interval '5 minutes' END",
}
# The daily figures as the worker would have counted them, one row per account and UTC day a job finished on.
TALLY_SQL = """
INSERT INTO {tally} ({columns})
SELECT {account}, ({finished_at} AT TIME ZONE 'UTC')::date,
       count(*) FILTER (WHERE {status} = 'completed'), count(*) FILTER (WHERE {status} = 'failed')
FROM {job} WHERE {finished_at} IS NOT NULL GROUP BY 1, 2
"""


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    headers: dict[str, str]
    expect: str  # text a correct answer contains


@dataclass(frozen=True)
class Seeding:
    endpoints: list[Endpoint]
    seconds: dict[str, float]  # per step: jobs, tallies (absent before DailyTally), vacuum
    tallies: int


@dataclass(frozen=True)
class Plan:
    sql: str
    params: Any
    lines: list[str]


def insert_jobs(args: argparse.Namespace, account_ids: list[int]) -> None:
    from core.sql import db_value, table
    from notifications.models import MAX_ATTEMPTS, Job, Priority

    email = {"to": "customer@example.com", "subject": "Your receipt", "body": "<p>Thanks for your order.</p>"}
    hook = {"event": "invoice.paid", "data": {"invoice": "in_1PZt7x2eZvKYlo2C", "amount": 4200, "currency": "eur"}}
    webhook = {"url": "https://hooks.example.com/in", "method": "POST", "headers": {}, "payload": hook}
    statement = JOBS_SQL.format(
        table=table(Job),
        columns=", ".join(column(Job, name) for name in JOB_VALUES),
        values=", ".join(JOB_VALUES.values()),
    )
    params = {
        "big": args.jobs,
        "others": args.other_accounts,
        "total": args.jobs + args.other_jobs,
        "accounts": account_ids,
        "priority": Priority.NORMAL.value,
        "email": db_value(Job, "payload", email),
        "webhook": db_value(Job, "payload", webhook),
        "max_attempts": MAX_ATTEMPTS,
        "error": "503 Service Unavailable",
    }
    run_sql(statement, params)


def tally_model() -> Any:
    """DailyTally once its table exists; None in a revision without it, whose figures count the jobs."""
    from django.apps import apps
    from django.db import connection

    try:
        model = apps.get_model("notifications", "DailyTally")
    except LookupError:
        return None
    return model if model._meta.db_table in connection.introspection.table_names() else None


def insert_tallies(tally: Any) -> int:
    from core.sql import table
    from notifications.models import Job

    statement = TALLY_SQL.format(
        tally=table(tally),
        columns=", ".join(column(tally, name) for name in ("account", "day", "completed", "failed")),
        job=table(Job),
        **{name: column(Job, name) for name in ("account", "finished_at", "status")},
    )
    return run_sql(statement)


def session_cookie(user: Any) -> str:
    """A signed-in session of ``user`` made as django.contrib.auth.login makes one, without the login form."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    session = importlib.import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = user._meta.pk.value_to_string(user)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def seed(args: argparse.Namespace) -> Seeding:
    from core.sql import table
    from notifications.models import Job, JobStatus

    log(f"dashboard: seeding {args.jobs:,} jobs of one account and {args.other_jobs:,} of {args.other_accounts} others")
    seeded = seed_accounts(1 + args.other_accounts, prefix="dashboard")
    big, tally, tallies = seeded[0], tally_model(), 0
    seconds: dict[str, float] = {}
    with timed("jobs", seconds):
        insert_jobs(args, [entry.account.pk for entry in seeded])
    if tally:
        with timed("tallies", seconds):
            tallies = insert_tallies(tally)
    with timed("vacuum", seconds):  # a steady table's visibility map, so index-only scans skip the heap
        for model in filter(None, (Job, tally)):
            run_sql(f"VACUUM (ANALYZE) {table(model)}")
    jobs = Job.objects.filter(account=big.account).order_by("-created_at", "-id").values_list("id", flat=True)
    api = {**PROXY_HEADERS, "X-API-Key": big.api_key}
    page = {**PROXY_HEADERS, "Cookie": session_cookie(big.account.user)}
    endpoints = [
        Endpoint("daily figures", "/api/v1/user/dashboard?days=90", api, '"totals"'),
        Endpoint("jobs page", "/dashboard/jobs/", page, str(jobs.first())),
        Endpoint(
            "failed jobs",
            "/api/v1/notifications/jobs?status=failed",
            api,
            str(jobs.filter(status=JobStatus.FAILED).first()),
        ),
    ]
    return Seeding(endpoints, seconds, tallies)


def get(port: int, endpoint: Endpoint) -> tuple[int, bytes, float]:
    """One GET on a new connection, as a browser behind the proxy makes it: (status, body, ms to the body read)."""
    answer = one_request(port, "GET", endpoint.path, endpoint.headers)
    return answer.status, answer.body, answer.seconds * 1000


def check(endpoint: Endpoint, status: int, body: bytes, where: str) -> None:
    """A wrong answer stops the bench: its timings would measure an error page."""
    if status != 200:
        raise BenchError(f"GET {endpoint.path} answered {status}: {body[:300]!r}; see {where}")
    if endpoint.expect.encode() not in body:
        raise BenchError(f"GET {endpoint.path} answered 200 without {endpoint.expect!r}; see {where}")


def warm_clients() -> int:
    """Twice gunicorn's workers (gunicorn.conf.py: WEB_CONCURRENCY, else two per core)."""
    return 2 * int(os.environ.get("WEB_CONCURRENCY") or 2 * (os.cpu_count() or 1))


def warm_workers(port: int, endpoints: list[Endpoint]) -> None:
    """A gunicorn worker imports the views and compiles the templates on its first request of each, hundreds of ms;
    sequential requests may never reach some workers. Concurrent ones, twice as many as workers, reach them all: a
    busy sync worker takes no new connection."""
    clients = warm_clients()
    with ThreadPoolExecutor(clients) as pool:
        for endpoint in endpoints:
            list(pool.map(get, repeat(port, clients), repeat(endpoint, clients)))


def measure(args: argparse.Namespace, endpoint: Endpoint, web: Proc) -> list[float]:
    """Milliseconds of ``--requests`` GETs one after another, after ``--warmup`` unmeasured ones."""
    log(f"dashboard: {endpoint.name}, {args.warmup} + {args.requests} requests")
    timings = []
    for _ in range(args.warmup + args.requests):
        status, body, ms = get(args.port, endpoint)
        check(endpoint, status, body, str(web.log_path))
        timings.append(ms)
    return timings[args.warmup :]


def explain(endpoint: Endpoint) -> list[Plan]:
    """The SELECTs the endpoint runs (its view called in this process through Django's test client, on the bench's
    database), each run again under EXPLAIN (ANALYZE, BUFFERS)."""
    from django.db import connection
    from django.test import Client

    statements: list[tuple[str, Any]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        response = Client().get(endpoint.path, headers={**endpoint.headers, "Host": "127.0.0.1"})
    check(endpoint, response.status_code, response.content, "the bench's own output (Django's test client)")
    plans = []
    with connection.cursor() as cursor:
        for sql, params in statements:
            if sql.lstrip().upper().startswith("SELECT"):
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
                plans.append(Plan(sql, params, [line for (line,) in cursor.fetchall()]))
    return plans


def report(args: argparse.Namespace, seeding: Seeding, timings: dict[str, list[float]]) -> None:
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in seeding.seconds.items())
    print(f"\ndashboard: seeded in {sum(seeding.seconds.values()):.1f} s ({steps}); {seeding.tallies:,} daily tallies")
    print(
        f"dashboard: every worker warmed ({warm_clients()} concurrent requests an endpoint), then one request at a "
        f"time: {args.warmup} warm-up and {args.requests} measured an endpoint\n"
    )
    rows = []
    for endpoint in seeding.endpoints:
        ms = timings[endpoint.name]
        rows.append((endpoint.name, endpoint.path, len(ms), percentile(ms, 0.5), percentile(ms, 0.99), max(ms)))
    table(COLUMNS, rows)
    print()
    for endpoint in seeding.endpoints:
        p99 = percentile(timings[endpoint.name], 0.99)
        verdict(f"{endpoint.name} p99", f"{p99:.1f} ms", f"< {MAX_P99_MS:.0f} ms", p99 < MAX_P99_MS)


def print_plans(endpoint: Endpoint, plans: list[Plan]) -> None:
    print(f"\nEXPLAIN (ANALYZE, BUFFERS): {endpoint.name}, GET {endpoint.path}: {len(plans)} SELECTs")
    for plan in plans:
        print(f"\n  {' '.join(plan.sql.split())}\n  params: {json.dumps(plan.params, default=str)}")
        print("".join(f"    {line}\n" for line in plan.lines), end="")


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "jobs", 1_000_000, "jobs of the account whose pages are read", env="dashboard")
    option(parser, "other-jobs", 1_000_000, "jobs of the other accounts, in the same table", env="dashboard")
    option(parser, "other-accounts", 50, "accounts sharing the other jobs", env="dashboard")
    option(parser, "requests", 20, "measured requests an endpoint, one after another", env="dashboard")
    option(parser, "warmup", 2, "unmeasured requests an endpoint before them", env="dashboard")
    option(parser, "port", 8771, "gunicorn's port", env="dashboard")


def run(args: argparse.Namespace) -> None:
    from django.core.management import call_command

    with own_services(args):
        # The jobs page links the stylesheet: a deployment serves collectstatic's files (README.md, Production), and
        # a page whose file is missing answers 500.
        call_command("collectstatic", interactive=False, verbosity=0)
        seeding = seed(args)
        with gunicorn("gunicorn-dashboard", args.port) as web:
            for endpoint in seeding.endpoints:  # every answer is checked before any is timed
                status, body, _ = get(args.port, endpoint)
                check(endpoint, status, body, str(web.log_path))
            warm_workers(args.port, seeding.endpoints)
            wait_for_quiet(args.quiet_wait)
            timings = {endpoint.name: measure(args, endpoint, web) for endpoint in seeding.endpoints}
        plans = [explain(endpoint) for endpoint in seeding.endpoints]
    report(args, seeding, timings)
    for endpoint, endpoint_plans in zip(seeding.endpoints, plans, strict=True):
        print_plans(endpoint, endpoint_plans)
