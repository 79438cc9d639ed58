"""delivery: webhook deliveries a second of the Celery worker against its floor, then latency at a steady rate.

Throughput: the app's workers, then the floor's (``floor_delivery.py``: a bare task that signs and POSTs the same
bytes), or with ``--against`` another revision's workers, deliver the same jobs to ``receiver.py``, round after round.
Latency: gunicorn and the app's workers together, sends at a steady rate through the API, accept to arrival.
bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib
import json
import math
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench.common import (
    ACCEPT_PATH,
    API_HEADERS,
    BIN,
    MIN_SHARE_OF_BEFORE,
    REQUESTS_PER_KEY,
    ROOT,
    TLS_DIR,
    BenchError,
    Proc,
    Sample,
    Seeded,
    command_cpu,
    gunicorn,
    judge_rounds,
    log,
    make_tls,
    open_loop,
    option,
    own_services,
    percentile,
    pgbouncer,
    revision_tree,
    running,
    seed_accounts,
    table,
    verdict,
    wait_for_quiet,
)
from bench.receiver import Dump, ReceiverClient

HELP = "webhook delivery against its floor, and latency"
MIN_DELIVERY_SHARE = 0.90  # of a floor that claims and records every job as the app must
MAX_LATENCY_P50_MS = 20.0
MAX_LATENCY_P99_MS = 100.0
# A realistic small event, the same bytes for the app and the floor.
PAYLOAD: dict[str, Any] = {
    "event": "invoice.paid",
    "data": {"invoice": "in_1PZt7x2eZvKYlo2C", "customer": "cus_Q8xb4kz", "amount": 4200, "currency": "eur"},
    "note": "NotifyHub delivery benchmark",
}
# The Startup quota is 15,000 webhooks a month per account: spread the throughput jobs well under it.
JOBS_PER_ACCOUNT = 10_000
STALL_SECONDS = 30  # stop waiting for deliveries after this long without an arrival
SENDERS = 64  # paced client threads: enough in flight that a slow API does not quietly lower the rate
THROUGHPUT_COLUMNS = (
    "target<7|#>2|deliv/s>9.1f|wall s>8.2f|arrived>12|dup>5|wkr ms>8.2f|pg ms>7.2f|rcv ms>7.2f|busy>6.0%"
    "|before>7.0%|sig>7"
)
LATENCY_COLUMNS = "p50 ms>9.1f|p95 ms>9.1f|p99 ms>9.1f|max ms>9.1f|arrived>12|dup>5|errors>8|sig>7"


# What the app's workers (and gunicorn) need on top of the bench's environment to deliver to the receiver.
APP_WORKER_ENV = {
    "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",  # the receiver is on 127.0.0.1; production keeps the filter on
    "WEBHOOK_CA_BUNDLE": str(TLS_DIR / "ca.pem"),
}


@contextlib.contextmanager
def started_receiver(
    port: int, *, close: bool = False, by_path: bool = False, name: str = "receiver"
) -> Iterator[tuple[Proc, ReceiverClient]]:
    """The HTTPS receiver on ``port`` with the bench's certificate (``make_tls`` first), and a client for what it
    recorded; with ``close`` it hangs up after each delivery, with ``by_path`` it records arrivals under their id and
    path (``receiver.arrival_key``). ``name`` names its log, var/bench/<name>.log."""
    command = [sys.executable, "-m", "bench.receiver", "--port", str(port)]
    command += ["--cert", str(TLS_DIR / "cert.pem"), "--key", str(TLS_DIR / "key.pem")]
    command += ["--close"] if close else []
    command += ["--by-path"] if by_path else []
    with running(name, command, port=port) as receiver:
        yield receiver, ReceiverClient(port, str(TLS_DIR / "ca.pem"))


@dataclass
class Delivery:
    args: argparse.Namespace
    env: dict[str, str]  # what the workers and gunicorn get on top of the bench's environment
    receiver: Proc
    client: ReceiverClient
    accounts: list[Seeded]
    floor_secret: str

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.args.receiver_port}/hooks/bench"

    def signatures(self, dump: Dump, target: str) -> tuple[int, int]:
        """Sampled requests with the expected body, validly signed, of those sampled plus those unsigned."""
        from core.signing import verify_signature
        from notifications.delivery.wire import json_bytes

        secrets = [self.floor_secret] if target == "floor" else [seeded.secret or "" for seeded in self.accounts]
        body = json_bytes(PAYLOAD)
        good = sum(
            sample["body"].encode() == body and any(verify_signature(s, sample["signature"], body) for s in secrets)
            for sample in dump.samples
        )
        return good, len(dump.samples) + dump.unsigned

    def sources(self, procs: list[Proc], **more: Callable[[], float]) -> dict[str, Callable[[], float]]:
        """What a delivery costs: CPU of the worker processes, of PostgreSQL (every backend) and of the receiver."""
        worker, postgres = lambda: sum(proc.cpu() for proc in procs), lambda: command_cpu("postgres")
        return {**more, "worker": worker, "postgres": postgres, "receiver": self.receiver.cpu}

    def enqueue(self, target: str, count: int, on_start: Callable[[], None] = lambda: None) -> list[str]:
        """What a throughput run delivers (``enqueue``); the keys the receiver records its deliveries under, each
        once. The message-delivery bench sends messages to apps' endpoints here (bench/message_delivery.py)."""
        return enqueue(self, target, count, on_start)

    def settled(self, procs: list[Proc], ids: list[str]) -> None:
        """Called once every one of ``ids`` arrived (or the wait gave up), the workers still running: waits for what
        the jobs set off beyond their own deliveries. Nothing here; the event-endpoints bench waits for their events
        (bench/events_out.py)."""


@dataclass(frozen=True)
class DeliveryRun:
    target: str
    round: int
    jobs: int
    arrived: int
    duplicates: int
    seconds: float  # from the first enqueue to the last first arrival
    cpu: dict[str, float]  # CPU seconds over the run: worker, postgres (every backend), receiver
    busy: float  # share of the machine's CPUs busy over the run
    before: float  # the same, in the idle second before it
    signatures: tuple[int, int]

    @property
    def rate(self) -> float:
        return self.arrived / self.seconds if self.seconds > 0 else 0.0

    def cpu_ms(self, source: str) -> float:
        """CPU milliseconds a delivery of one of ``cpu``'s sources."""
        return self.cpu.get(source, 0.0) * 1000 / max(self.arrived, 1)

    def row(self) -> tuple[Any, ...]:
        per_delivery = [self.cpu_ms(name) for name in ("worker", "postgres", "receiver")]
        counts = f"{self.arrived}/{self.jobs}", self.duplicates
        tail = self.busy, self.before, "{}/{}".format(*self.signatures)
        return self.target, self.round, self.rate, self.seconds, *counts, *per_delivery, *tail


@contextlib.contextmanager
def workers(d: Delivery, target: str) -> Iterator[list[Proc]]:
    """The Procfile's worker line with the bench's pool and concurrency, ``--processes`` times side by side."""
    args, env = d.args, dict(d.env)
    module = "bench.floor_delivery" if target == "floor" else "notifyhub"
    env["BENCH_FLOOR_POOL_SIZE"] = str(args.concurrency if args.pool == "threads" else 1)
    command = [str(BIN / "celery"), "--app", module, "worker", "--loglevel", "INFO", "--pool", args.pool]
    command += ["--concurrency", str(args.concurrency)]
    # Another revision's code shares the bench's var/ (NOTIFYHUB_VAR_DIR), so its secrets and encryption key.
    tree = revision_tree(args.against) if target == "before" else ROOT
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                running(f"worker-{target}-{n}", [*command, "--hostname", f"{target}{n}@%h"], env=env, cwd=tree)
            )
            for n in range(args.processes)
        ]


def warmed_up(d: Delivery, procs: list[Proc], ids: list[str]) -> float:
    """Waits for the warm-up jobs (every thread or child imports lazily and opens its connections on its first
    tasks), clears the receiver, waits for a quiet machine; returns the busy share of its last idle second."""
    if not d.client.wait_for(ids, stall_seconds=10, start_grace=60).first_arrivals(ids):
        raise BenchError(f"none of the warm-up jobs arrived; see {procs[0].log_path}")
    d.settled(procs, ids)
    d.client.reset()
    return wait_for_quiet(d.args.quiet_wait)


def enqueue(d: Delivery, target: str, count: int, on_start: Callable[[], None] = lambda: None) -> list[str]:
    """App: stores jobs the way the API does, in one transaction whose commit enqueues them all. Floor: stores the
    same rows in one statement, then publishes a bare task for each. ``on_start`` runs just before the first message
    is sent."""
    if target == "floor":
        from bench.floor_delivery import FLOOR_TASK, app
        from notifications.models import Job, JobType

        stored = {"url": d.url, "method": "POST", "headers": {}, "payload": PAYLOAD}
        jobs = [
            Job(account=d.accounts[n % len(d.accounts)].account, type=JobType.WEBHOOK, payload=stored)
            for n in range(count)
        ]
        Job.objects.bulk_create(jobs)
        on_start()
        for job in jobs:  # broker priority 5: what the app sends for a normal-priority job
            app.send_task(FLOOR_TASK, args=[str(job.id)], priority=5)
        return [str(job.id) for job in jobs]
    from django.db import transaction

    from notifications.services import webhook_job_create

    with transaction.atomic():
        transaction.on_commit(on_start)  # registered first: runs after COMMIT, before the first enqueue
        accounts = [d.accounts[number % len(d.accounts)].account for number in range(count)]
        return [str(webhook_job_create(account=account, url=d.url, payload=PAYLOAD).id) for account in accounts]


def throughput(d: Delivery, target: str, number: int) -> DeliveryRun:
    log(f"delivery: {target} worker, round {number}")
    with workers(d, target) as procs:
        before = warmed_up(d, procs, d.enqueue(target, max(50, 4 * d.args.concurrency * d.args.processes)))
        sources = d.sources(procs)
        marks: list[Sample] = []
        ids = d.enqueue(target, d.args.jobs, lambda: marks.append(Sample.take(**sources)))
        dump = d.client.wait_for(ids, stall_seconds=STALL_SECONDS)
        end = Sample.take(**sources)
        d.settled(procs, ids)
        for proc in procs:
            proc.check_alive()
    first = dump.first_arrivals(ids)
    return DeliveryRun(
        target,
        number,
        jobs=len(ids),
        arrived=len(first),
        duplicates=dump.duplicates(ids),
        seconds=max(first.values()) - marks[0].at if first else math.nan,
        cpu=end.cpu_since(marks[0]),
        busy=end.busy_since(marks[0]),
        before=before,
        signatures=d.signatures(dump, target),
    )


def every_job_verdict(arrived: int, jobs: int, duplicates: int, signatures: list[tuple[int, int]]) -> None:
    ok = arrived == jobs and not duplicates and all(good == checked for good, checked in signatures)
    verdict("every job arrived once, signed", f"{arrived}/{jobs}", "all", ok)


def throughput_verdicts(runs: list[DeliveryRun]) -> None:
    """Every job of every run arrived once, signed; and a note when other work kept the CPUs busy before a run."""
    arrived, jobs, duplicates = (sum(getattr(run, name) for run in runs) for name in ("arrived", "jobs", "duplicates"))
    every_job_verdict(arrived, jobs, duplicates, [run.signatures for run in runs])
    if any(run.before > 0.15 for run in runs):
        print("  note: other processes kept the CPUs busy before a run (column 'before'); re-run when quiet")


def paced_load(d: Delivery, seconds: float) -> tuple[list[tuple[str, float, float]], Counter[str]]:
    """POSTs webhook sends at ``--rate`` a second, open loop, shared by SENDERS threads, rotating over the seeded keys.
    Returns (job id, request written, 202 read) of each accepted job, on the receiver's clock, and the errors."""
    body = json.dumps({"url": d.url, "payload": PAYLOAD}).encode()
    accepted: list[tuple[str, float, float]] = []  # appended to by every sender thread (list.append is atomic)

    def send(connection: http.client.HTTPConnection, number: int, _due: float) -> str:
        headers = {**API_HEADERS, "X-API-Key": d.accounts[number % len(d.accounts)].api_key}
        sent_at = time.monotonic()
        connection.request("POST", ACCEPT_PATH, body=body, headers=headers)
        response = connection.getresponse()
        answer, accepted_at = response.read(), time.monotonic()
        if response.status != 202:
            return f"status {response.status}"
        accepted.append((json.loads(answer)["data"]["jobId"], sent_at, accepted_at))
        return ""

    _, errors = open_loop(d.args.port, d.args.rate, round(d.args.rate * seconds), SENDERS, send)
    return accepted, errors


def latency(d: Delivery) -> None:
    args = d.args
    log(f"delivery latency: gunicorn and the app worker, {args.rate:g}/s for {args.duration:g} s")
    with gunicorn("gunicorn-delivery", args.port, **d.env) as web, workers(d, "app") as procs:
        before = warmed_up(d, [web, *procs], [job_id for job_id, _, _ in paced_load(d, args.warmup)[0]])
        sources = d.sources(procs, gunicorn=web.cpu)
        start = Sample.take(**sources)
        accepted, errors = paced_load(d, args.duration)
        loaded = Sample.take(**sources)
        ids = [job_id for job_id, _, _ in accepted]
        dump = d.client.wait_for(ids, stall_seconds=STALL_SECONDS)
        drained = Sample.take(**sources)  # after the last arrival, so a backlog cleared after the load counts too
    first = dump.first_arrivals(ids)
    to_arrival = [(first[job_id] - accepted_at) * 1000 for job_id, _, accepted_at in accepted if job_id in first]
    accept_ms = [(accepted_at - sent_at) * 1000 for _, sent_at, accepted_at in accepted]
    p50, p95, p99 = (percentile(to_arrival, share) for share in (0.50, 0.95, 0.99))
    duplicates, signatures = dump.duplicates(ids), d.signatures(dump, "app")
    achieved = len(ids) / (loaded.at - start.at)
    print(f"\nlatency: {args.rate:g} jobs/s for {args.duration:g} s through the API ({achieved:.1f}/s achieved)")
    row = p50, p95, p99, max(to_arrival, default=math.nan), f"{len(first)}/{len(ids)}", duplicates
    table(LATENCY_COLUMNS, [(*row, errors.total(), "{}/{}".format(*signatures))])
    cpu = ", ".join(f"{name} {sec / max(len(ids), 1) * 1000:.2f}" for name, sec in drained.cpu_since(start).items())
    print(
        f"  API accept p50 {percentile(accept_ms, 0.5):.1f} ms, p99 {percentile(accept_ms, 0.99):.1f} ms; machine busy "
        f"{loaded.busy_since(start):.0%} (before: {before:.0%}); CPU ms per job: {cpu}"
    )
    if errors:
        print(f"  errors: {dict(errors)}")
    if achieved < 0.95 * args.rate:
        print("  note: the client fell behind the requested rate (the API answered too slowly for its threads)")
    print()
    verdict("p50 accept-to-arrival", f"{p50:.1f} ms", f"< {MAX_LATENCY_P50_MS:.0f} ms", p50 < MAX_LATENCY_P50_MS)
    verdict("p99 accept-to-arrival", f"{p99:.1f} ms", f"< {MAX_LATENCY_P99_MS:.0f} ms", p99 < MAX_LATENCY_P99_MS)
    every_job_verdict(len(first), len(ids) + errors.total(), duplicates, [signatures])


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "jobs", 5000, "jobs per throughput run", env="delivery")
    option(parser, "rounds", 3, "app then floor, this many times; the verdict takes the median ratio", env="delivery")
    option(parser, "pool", "threads", "worker pool", env="delivery", choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "worker concurrency", env="delivery")
    option(parser, "processes", 2, "worker processes side by side (one per core)", env="delivery")
    option(parser, "rate", 100.0, "latency: API requests a second", env="delivery")
    option(parser, "duration", 20.0, "latency: seconds of load", env="delivery")
    option(parser, "warmup", 3.0, "latency: warm-up seconds", env="delivery")
    option(parser, "port", 8771, "gunicorn's port", env="delivery")
    option(parser, "receiver-port", 8743, "the HTTPS receiver's port", env="delivery")
    option(
        parser,
        "receiver-connections",
        "keep",
        "keep: the receiver keeps connections alive; close: it hangs up after each delivery",
        env="delivery",
        choices=["keep", "close"],
    )
    option(
        parser, "against", "", "a git revision whose workers take the floor's place (no latency phase)", env="delivery"
    )
    option(
        parser,
        "via",
        "direct",
        "direct: every worker (app and floor) and gunicorn connect to PostgreSQL; pooled: through a PgBouncer in "
        "transaction pooling the bench starts, with DATABASE_POOLER=pgbouncer",
        env="delivery",
        choices=["direct", "pooled"],
    )


def run(args: argparse.Namespace) -> None:
    log(
        f"delivery: {args.processes} * --pool {args.pool} --concurrency {args.concurrency}, rounds: {args.rounds}, "
        f"receiver: {args.receiver_connections} connections, database: {args.via}"
    )
    make_tls()
    with (
        own_services(args),
        pgbouncer(args.database_url) if args.via == "pooled" else contextlib.nullcontext({}) as via,
    ):
        importlib.import_module("bench.floor_delivery")  # reads REDIS_URL
        from notifyhub.celery import app as celery_app

        celery_app.set_current()  # the floor's Celery app made itself current; the app's publish uses the current app
        floor_secret = "whsec_" + uuid.uuid4().hex * 2
        env = {
            **APP_WORKER_ENV,
            "BENCH_FLOOR_CA_BUNDLE": str(TLS_DIR / "ca-bundle.pem"),
            "BENCH_FLOOR_SECRET": floor_secret,
            **via,
        }
        api_requests = args.rate * min(60.0, args.warmup + args.duration)
        direct_jobs = (args.jobs + 200) * args.rounds
        count = max(40, math.ceil(api_requests / REQUESTS_PER_KEY), math.ceil(direct_jobs / JOBS_PER_ACCOUNT))
        with started_receiver(args.receiver_port, close=args.receiver_connections == "close") as (receiver, client):
            log(f"delivery: seeding {count} Startup accounts")
            accounts = seed_accounts(count, prefix="delivery", secrets=True)
            d = Delivery(args, env, receiver, client, accounts, floor_secret)
            # Against a revision, its workers take the floor's place, round by round.
            targets = ("app", "before") if args.against else ("app", "floor")
            runs = [throughput(d, target, n) for n in range(1, args.rounds + 1) for target in targets]
            print()
            table(THROUGHPUT_COLUMNS, [run.row() for run in runs])
            print()
            pairs = [(app.rate, floor.rate) for app, floor in zip(runs[0::2], runs[1::2], strict=True)]
            if args.against:
                judge_rounds(f"app/{args.against} deliveries/s", pairs, MIN_SHARE_OF_BEFORE)
            else:
                judge_rounds("app/floor deliveries/s", pairs, MIN_DELIVERY_SHARE)
            throughput_verdicts(runs)
            if not args.against:
                latency(d)
