"""NotifyHub benchmarks; bench/README.md says what each measures and how to read it.

  accept    POST /api/v1/notifications/webhook under gunicorn, app against its floor, loaded with wrk
  delivery  webhook deliveries/s of the Celery worker against its floor; latency at a steady rate through the API
  email     an email job through a fake provider against a webhook job, one at a time
  events    the provider-event receivers under gunicorn: signed SendGrid batches, then Postmark events at a steady rate
  dashboard what an account holder reads under gunicorn, with a million jobs of their own: GETs one at a time
  purge     manage.py purgejobs deleting a million finished jobs while sends go on at a steady rate
  all       the six in turn (the default)

They print numbers and verdicts and exit 0 whether or not a target is met; 1 means a benchmark could not run.
Every option defaults to an environment variable, named in its help.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib
import itertools
import json
import math
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the project is not on the path

from bench.common import (
    BIN,
    ROOT,
    TLS_DIR,
    VAR_DIR,
    BenchError,
    Proc,
    Sample,
    Seeded,
    bench_main,
    children_cpu,
    command_cpu,
    flush_redis,
    fresh_services,
    gunicorn,
    judge_rounds,
    log,
    make_tls,
    option,
    percentile,
    revision_tree,
    running,
    seed_accounts,
    table,
    verdict,
    wait_for_quiet,
)
from bench.dashboard import dashboard
from bench.purge import purge
from bench.receiver import Dump, ReceiverClient
from tests.fakes.events import Delivery as ProviderPost
from tests.fakes.events import PostmarkEvents, SendGridEvents

ACCEPT_PATH = "/api/v1/notifications/webhook"
# X-Forwarded-Proto: what the TLS proxy in front of production adds; without it the app redirects to HTTPS.
API_HEADERS = {"Content-Type": "application/json", "X-Forwarded-Proto": "https"}
# A Startup key may make 200 requests a minute: plan for at most 150 a key so none is ever limited.
REQUESTS_PER_KEY = 150

# --- accept: the accept path against its floor ------------------------------------------------------------

MIN_ACCEPT_SHARE = 0.60
# A change may not make the accept path slower than 95% of the revision it replaces.
MIN_SHARE_OF_BEFORE = 0.95
MAX_ACCEPT_P99_MS = 50.0
MAX_RPS = 3000  # the fastest app the API keys are planned for
KEYS_FILE = VAR_DIR / "api-keys.txt"
ACCEPT_COLUMNS = (
    "round<7|target<8|req/s>10.1f|p50 ms>9.1f|p99 ms>9.1f|errors>8|requests>10|jobs stored>13|cpu ms/req>12.2f"
    "|other load>12.0%"
)


@dataclass(frozen=True)
class AcceptRun:
    target: str
    rps: float
    p50_ms: float
    p99_ms: float
    non_202: int
    socket_errors: int
    requests: int
    jobs_stored: int
    cpu_ms: float  # gunicorn's CPU per request: what a request costs the web tier, steadier than req/s
    other_load: float  # share of all CPUs used by processes that are not the bench's

    @property
    def errors(self) -> int:
        return self.non_202 + self.socket_errors


def run_wrk(args: argparse.Namespace, target: str, *, seconds: int, first_key: int) -> dict[str, int]:
    # Idempotency keys are unique per account and both servers share the accounts: each load tags its own.
    tag = f"{target}-{uuid.uuid4().hex[:12]}"
    command = ["wrk", "-t", str(args.wrk_threads), "-c", str(args.connections), "-d", f"{seconds}s", "--timeout", "5s"]
    command += ["-s", str(Path(__file__).with_name("accept.lua")), f"http://127.0.0.1:{args.port}{ACCEPT_PATH}"]
    command += ["--", str(KEYS_FILE), tag, str(args.wrk_threads), str(first_key)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + 60)
    except subprocess.TimeoutExpired as error:
        raise BenchError(f"wrk did not finish on {target} within {seconds + 60} s") from error
    line = next((line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise BenchError(f"wrk failed on {target} (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return {name: int(value) for name, value in (item.split("=", 1) for item in line.split()[1:])}


def accept_run(args: argparse.Namespace, target: str, *, first_key: int) -> AcceptRun:
    from notifications.models import Job

    log(f"accept: {target} on port {args.port}")
    settings = "bench.floor_accept" if target == "floor" else None
    tree = revision_tree(args.against) if target == "before" else ROOT
    with gunicorn(f"gunicorn-{target}", args.port, settings, tree=tree, **request_log_env(args, target)) as server:
        # One request first, so a broken server fails loudly instead of producing a fast row of errors.
        connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
        body = {"url": "https://hooks.example.com/in", "payload": {}, "idempotencyKey": uuid.uuid4().hex}
        headers = {**API_HEADERS, "X-API-Key": KEYS_FILE.read_text().split()[0]}
        try:
            connection.request("POST", ACCEPT_PATH, body=json.dumps(body), headers=headers)
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            raise BenchError(f"{target}: first request failed: {error}; see {server.log_path}") from error
        if response.status != 202:
            raise BenchError(f"{target} answered {response.status}: {response.read()[:300]!r}; see {server.log_path}")
        connection.close()
        wait_for_quiet(args.quiet_wait)
        # Warm-up: every worker imports lazily and opens its database and broker connections.
        run_wrk(args, target, seconds=args.warmup, first_key=first_key)
        time.sleep(1)  # lets the warm-up's last requests land before the jobs are counted
        jobs_before = Job.objects.count()
        sources = {
            "server": server.cpu,
            "helpers": lambda: command_cpu("postgres", "redis-server"),
            "wrk": children_cpu,
        }
        before = Sample.take(**sources)
        stats = run_wrk(args, target, seconds=args.duration, first_key=first_key)
        after = Sample.take(**sources)
    cpu = after.cpu_since(before)
    return AcceptRun(
        target,
        rps=stats["requests"] / stats["duration_us"] * 1e6,
        p50_ms=stats["p50_us"] / 1000,
        p99_ms=stats["p99_us"] / 1000,
        non_202=stats["unexpected"],
        socket_errors=stats["connect"] + stats["read"] + stats["write"] + stats["timeout"],
        requests=stats["requests"],
        jobs_stored=Job.objects.count() - jobs_before,  # once gunicorn stopped: requests in flight have landed
        cpu_ms=cpu["server"] * 1000 / max(stats["requests"], 1),
        other_load=max(0.0, after.busy_since(before) - after.share_since(before, sum(cpu.values()))),
    )


def request_log_env(args: argparse.Namespace, target: str) -> dict[str, str]:
    """How the server logs requests. ``off``: not at all, so the bench measures the app, not log writing.
    ``on``: as each side runs in production: gunicorn's access line before the app wrote its own request line
    (docs/observability.md), the app's line (and gunicorn's off, its default) after.
    """
    if args.request_log == "off":
        return {"GUNICORN_ACCESS_LOG": "off", "LOG_LEVEL": "WARNING"}
    return {"GUNICORN_ACCESS_LOG": "-" if target == "before" else "off", "LOG_LEVEL": "INFO"}


def accept_row(label: str, runs: list[AcceptRun]) -> tuple[Any, ...]:
    """Medians of the rates, latencies and CPU; totals of the counts; the busiest run's other load."""
    medians = [median(getattr(run, name) for run in runs) for name in ("rps", "p50_ms", "p99_ms")]
    totals = [sum(getattr(run, name) for run in runs) for name in ("errors", "requests", "jobs_stored")]
    cpu, other = median(run.cpu_ms for run in runs), max(run.other_load for run in runs)
    return label, runs[0].target, *medians, *totals, cpu, other


def accept(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: apt-get install wrk")
    keys_per_round = max(args.connections, math.ceil(MAX_RPS * (args.warmup + args.duration) / REQUESTS_PER_KEY))
    log(f"accept: wrk -t{args.wrk_threads} -c{args.connections}, {args.duration} s a run, rounds: {args.rounds}")
    fresh_services(args.database_url, args.redis_url)
    try:
        seeded = seed_accounts(keys_per_round * args.rounds, prefix="accept")
        KEYS_FILE.write_text("".join(f"{account.api_key}\n" for account in seeded))
        # Each round starts on keys of its own, so no key sees two rounds' requests within one minute.
        # Against a revision, its code takes the floor's place: the same load, alternating, round by round.
        targets = ("app", "before") if args.against else ("app", "floor")
        rounds = [
            [accept_run(args, target, first_key=number * keys_per_round) for target in targets]
            for number in range(args.rounds)
        ]
    finally:
        flush_redis(args.redis_url)  # no worker runs: drop the queued messages and rate-limit state
    apps, floors = [app for app, _ in rounds], [floor for _, floor in rounds]
    rows = [accept_row(str(number), [run]) for number, pair in enumerate(rounds, start=1) for run in pair]
    rows += [accept_row("median", apps), accept_row("median", floors)] if len(rounds) > 1 else []
    print()
    table(ACCEPT_COLUMNS, rows)
    print()
    pairs = [(app.rps, other.rps) for app, other in rounds]
    if args.against:
        judge_rounds(f"app/{args.against} req/s", pairs, MIN_SHARE_OF_BEFORE)
    else:
        judge_rounds("app/floor req/s", pairs, MIN_ACCEPT_SHARE)
    p99 = median(app.p99_ms for app in apps)
    verdict("app p99", f"{p99:.1f} ms", f"< {MAX_ACCEPT_P99_MS:.0f} ms", p99 < MAX_ACCEPT_P99_MS)
    errors = sum(run.errors for run in apps + floors)
    verdict("errors", str(errors), "0", errors == 0)
    cost = median(app.cpu_ms for app in apps) / max(median(floor.cpu_ms for floor in floors), 1e-9)
    print(f"  gunicorn CPU per request: app {cost:.2f}x the {floors[0].target}'s (not a target; explains the ratio)")
    for run in apps + floors:
        if run.errors:
            print(f"  {run.target}: {run.non_202} answers not 202, {run.socket_errors} socket errors or timeouts")
        if run.other_load > 0.10:
            print(f"  note: other processes used {run.other_load:.0%} of the CPUs in a {run.target} run; re-run")
    if max(app.rps for app in apps) > MAX_RPS:
        print(f"  note: the app ran above {MAX_RPS} req/s; some keys may have met the rate limit")


# --- delivery: the worker against its floor, then latency ---------------------------------------------------

MIN_DELIVERY_SHARE = 0.80
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

    def row(self) -> tuple[Any, ...]:
        per_delivery = [self.cpu[name] / max(self.arrived, 1) * 1000 for name in ("worker", "postgres", "receiver")]
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
    d.client.reset()
    return wait_for_quiet(d.args.quiet_wait)


def enqueue(d: Delivery, target: str, count: int, on_start: Callable[[], None] = lambda: None) -> list[str]:
    """App: stores jobs the way the API does, in one transaction whose commit enqueues them all. Floor: publishes
    bare tasks. ``on_start`` runs just before the first message is sent."""
    if target == "floor":
        from bench.floor_delivery import FLOOR_TASK, app

        ids = [str(uuid.uuid4()) for _ in range(count)]
        on_start()
        for delivery_id in ids:  # broker priority 5: what the app sends for a normal-priority job
            app.send_task(FLOOR_TASK, args=[delivery_id, d.url, PAYLOAD], priority=5)
        return ids
    from django.db import transaction

    from notifications.services import webhook_job_create

    with transaction.atomic():
        transaction.on_commit(on_start)  # registered first: runs after COMMIT, before the first enqueue
        accounts = [d.accounts[number % len(d.accounts)].account for number in range(count)]
        return [str(webhook_job_create(account=account, url=d.url, payload=PAYLOAD).id) for account in accounts]


def throughput(d: Delivery, target: str, number: int) -> DeliveryRun:
    log(f"delivery: {target} worker, round {number}")
    with workers(d, target) as procs:
        before = warmed_up(d, procs, enqueue(d, target, max(50, 4 * d.args.concurrency * d.args.processes)))
        sources = d.sources(procs)
        marks: list[Sample] = []
        ids = enqueue(d, target, d.args.jobs, lambda: marks.append(Sample.take(**sources)))
        dump = d.client.wait_for(ids, stall_seconds=STALL_SECONDS)
        end = Sample.take(**sources)
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


def paced_load(d: Delivery, seconds: float) -> tuple[list[tuple[str, float, float]], Counter[str]]:
    """POSTs webhook sends at ``--rate`` a second: request i is due at start + i / rate, shared by SENDERS threads,
    each on its own keep-alive connection, rotating over the seeded keys. Returns (job id, request written, 202 read)
    of each accepted job, on the receiver's clock, and the errors."""
    total, rate, port = round(d.args.rate * seconds), d.args.rate, d.args.port
    body = json.dumps({"url": d.url, "payload": PAYLOAD}).encode()
    accepted: list[tuple[str, float, float]] = []
    errors: Counter[str] = Counter()
    lock, start = threading.Lock(), time.monotonic() + 0.1

    def sender(first: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for number in range(first, total, SENDERS):
            time.sleep(max(0.0, start + number / rate - time.monotonic()))
            headers = {**API_HEADERS, "X-API-Key": d.accounts[number % len(d.accounts)].api_key}
            sent_at = time.monotonic()
            try:
                connection.request("POST", ACCEPT_PATH, body=body, headers=headers)
                response = connection.getresponse()
                answer, accepted_at = response.read(), time.monotonic()
            except (OSError, http.client.HTTPException) as error:
                # Not retried: a retry could accept the job twice. A fresh connection serves the next request.
                with lock:
                    errors[type(error).__name__] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                continue
            with lock:
                if response.status == 202:
                    accepted.append((json.loads(answer)["data"]["jobId"], sent_at, accepted_at))
                else:
                    errors[f"status {response.status}"] += 1
        connection.close()

    threads = [threading.Thread(target=sender, args=(first,), daemon=True) for first in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
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


def delivery(args: argparse.Namespace) -> None:
    log(
        f"delivery: {args.processes} * --pool {args.pool} --concurrency {args.concurrency}, rounds: {args.rounds}, "
        f"receiver: {args.receiver_connections} connections"
    )
    make_tls()
    fresh_services(args.database_url, args.redis_url)
    importlib.import_module("bench.floor_delivery")  # reads REDIS_URL
    from notifyhub.celery import app as celery_app

    celery_app.set_current()  # the floor's Celery app made itself current; the app's publish uses the current app
    floor_secret = "whsec_" + uuid.uuid4().hex * 2
    env = {
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",  # the receiver is on 127.0.0.1; production keeps the filter on
        "WEBHOOK_CA_BUNDLE": str(TLS_DIR / "ca.pem"),
        "BENCH_FLOOR_CA_BUNDLE": str(TLS_DIR / "ca-bundle.pem"),
        "BENCH_FLOOR_SECRET": floor_secret,
    }
    api_requests = args.rate * min(60.0, args.warmup + args.duration)
    direct_jobs = (args.jobs + 200) * args.rounds
    count = max(40, math.ceil(api_requests / REQUESTS_PER_KEY), math.ceil(direct_jobs / JOBS_PER_ACCOUNT))
    command = [sys.executable, "-m", "bench.receiver", "--port", str(args.receiver_port)]
    command += ["--cert", str(TLS_DIR / "cert.pem"), "--key", str(TLS_DIR / "key.pem")]
    command += ["--close"] if args.receiver_connections == "close" else []
    try:
        with running("receiver", command, port=args.receiver_port) as receiver:
            log(f"delivery: seeding {count} Startup accounts")
            accounts = seed_accounts(count, prefix="delivery", secrets=True)
            client = ReceiverClient(args.receiver_port, str(TLS_DIR / "ca.pem"))
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
            arrived, jobs = sum(run.arrived for run in runs), sum(run.jobs for run in runs)
            every_job_verdict(arrived, jobs, sum(run.duplicates for run in runs), [run.signatures for run in runs])
            if any(run.before > 0.15 for run in runs):
                print("  note: other processes kept the CPUs busy before a run (column 'before'); re-run when quiet")
            if not args.against:
                latency(d)
    finally:
        flush_redis(args.redis_url)  # no queued task outlives the run


# --- email: an email job through a fake provider against a webhook job ----------------------------------------

MAX_EMAIL_RATIO = 2.0
EMAIL_COLUMNS = "path<8|p50>8.1f|p90>8.1f|max>8.1f|pickup p50>12.1f|attempt p50>13.1f"
EMAIL_ROUND_COLUMNS = (
    "target<8|#>3|emails/s>10.1f|email p50>11.1f|attempt p50>13.1f|webhook p50>13.1f|wkr ms/pair>13.2f"
)
# One job's times in milliseconds: accept to delivered, pickup (accept to claim), attempt (claim to delivered).
Timing = tuple[float, float, float]


@dataclass(frozen=True)
class EmailBench:
    args: argparse.Namespace
    env: dict[str, str]  # what the worker gets on top of the bench's environment
    create: dict[str, Callable[[], Any]]  # job type -> makes one job through the service the API calls


@dataclass(frozen=True)
class EmailRun:
    target: str
    round: int
    timings: dict[str, list[Timing]]  # per job type, in the order they ran
    worker_cpu: float  # CPU seconds of the worker over the measured jobs

    def p50(self, name: str, column: int = 0) -> float:
        return median(timing[column] for timing in self.timings[name])

    @property
    def emails_per_second(self) -> float:
        """Email jobs a second, one at a time: the inverse of the median accept-to-delivered time."""
        return 1000 / self.p50("email")

    def row(self) -> tuple[Any, ...]:
        cpu_per_pair = self.worker_cpu * 1000 / len(self.timings["email"])
        head = self.target, self.round, self.emails_per_second, self.p50("email"), self.p50("email", 2)
        return *head, self.p50("webhook"), cpu_per_pair


def job_timing(create: Callable[[], Any]) -> Timing:
    """Creates one job and waits for it."""
    from notifications.models import Job

    job_id, deadline = create().id, time.monotonic() + 30
    while time.monotonic() < deadline:
        job = Job.objects.only("status", "created_at", "started_at", "completed_at", "error_message").get(id=job_id)
        if job.status == "completed":
            total, pickup = (
                (end - job.created_at).total_seconds() * 1000 for end in (job.completed_at, job.started_at)
            )
            return total, pickup, total - pickup
        if job.status == "failed":
            raise BenchError(f"{job.type} job {job_id} failed: {job.error_message}")
        time.sleep(0.002)
    raise BenchError(f"job {job_id} did not complete within 30 s")


def email_run(b: EmailBench, target: str, number: int) -> EmailRun:
    """One worker as the Procfile runs it, of this code or of ``--against``'s revision: a warm-up, then the jobs of
    each type alternating, each waited for before the next."""
    log(f"email: {target} worker, round {number}")
    command = [str(BIN / "celery"), "--app", "notifyhub", "worker", "--pool", "threads", "--concurrency", "8"]
    tree = revision_tree(b.args.against) if target == "before" else ROOT
    timings: dict[str, list[Timing]] = {name: [] for name in b.create}
    with running(f"worker-email-{target}", [*command, "--loglevel", "WARNING"], env=b.env, cwd=tree) as worker:
        time.sleep(3)
        worker.check_alive()
        for create in b.create.values():
            for _ in range(10):  # warm-up: the worker's threads import lazily and open their connections
                job_timing(create)
        wait_for_quiet(b.args.quiet_wait)
        before = Sample.take(worker=worker.cpu)
        for _ in range(b.args.jobs):
            for name, create in b.create.items():
                timings[name].append(job_timing(create))
        cpu = Sample.take(worker=worker.cpu).cpu_since(before)["worker"]
    return EmailRun(target, number, timings, cpu)


def report_email(args: argparse.Namespace, runs: list[EmailRun]) -> None:
    print(f"\nemail: {args.jobs} jobs of each type, one at a time, worker threads x8; milliseconds\n")
    apps = [run for run in runs if run.target == "app"]
    if args.against:
        table(EMAIL_ROUND_COLUMNS, [run.row() for run in runs])
        print()
        pairs = [(app.emails_per_second, other.emails_per_second) for app, other in zip(apps, runs[1::2], strict=True)]
        judge_rounds(f"app/{args.against} email jobs/s", pairs, MIN_SHARE_OF_BEFORE)
    else:
        (run,) = apps
        totals = {name: [timing[0] for timing in timings] for name, timings in run.timings.items()}
        rows = [
            (name, run.p50(name), percentile(totals[name], 0.9), max(totals[name]), run.p50(name, 1), run.p50(name, 2))
            for name in run.timings
        ]
        table(EMAIL_COLUMNS, rows)
        print()
    ratio = median(run.p50("email") / run.p50("webhook") for run in apps)
    verdict("email p50 / webhook p50", f"{ratio:.2f}", f"<= {MAX_EMAIL_RATIO:.2f}", ratio <= MAX_EMAIL_RATIO)


def email(args: argparse.Namespace) -> None:
    authority = make_tls()
    fresh_services(args.database_url, args.redis_url)
    from django.utils import timezone

    from accounts.services import provider_key_set
    from domains.models import DomainRegistration, DomainStatus, SenderDomain
    from notifications.services import email_job_create, webhook_job_create
    from tests.fakes.providers import FakeSendGrid
    from tests.fakes.receiver import Receiver

    try:
        # SendGrid over HTTPS, as the real one: a new connection costs a TCP and a TLS handshake.
        with FakeSendGrid().speak_tls(authority) as sendgrid, Receiver(authority) as receiver:
            sendgrid.accept_key("bench-sendgrid-key")
            account = seed_accounts(1, prefix="email", secrets=True)[0].account
            provider_key_set(account=account, provider="SENDGRID", api_key="bench-sendgrid-key")
            domain = SenderDomain.objects.create(
                account=account, name="example.com", status=DomainStatus.VERIFIED, verified_at=timezone.now()
            )
            DomainRegistration.objects.create(domain=domain, provider="SENDGRID", provider_domain_id="1", verified=True)
            create = {
                "email": lambda: email_job_create(
                    account=account, to="user@example.com", subject="Hi", body="<p>x</p>"
                ),
                "webhook": lambda: webhook_job_create(account=account, url=receiver.url(), payload={"event": "bench"}),
            }
            env = {"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "WEBHOOK_CA_BUNDLE": str(TLS_DIR / "ca.pem")}
            # requests trusts the fake provider's CA through the variable it reads for a private CA.
            env.update(REQUESTS_CA_BUNDLE=str(TLS_DIR / "ca-bundle.pem"), SENDGRID_API_URL=sendgrid.url)
            bench = EmailBench(args, {**env, "LOG_LEVEL": "WARNING"}, create)
            # Against a revision, its worker and this code's alternate, round by round.
            targets, rounds = (("app", "before"), args.rounds) if args.against else (("app",), 1)
            runs = [email_run(bench, target, n) for n in range(1, rounds + 1) for target in targets]
    finally:
        flush_redis(args.redis_url)
    report_email(args, runs)


# --- events: the provider-event receivers ---------------------------------------------------------------------

MAX_BATCH_SECONDS = 1.0
MAX_SINGLE_P99_MS = 50.0
# Types NotifyHub tracks, so every event of a batch is stored; a real batch mixes them.
SENDGRID_KINDS = ("delivered", "open", "click")
BATCH_COLUMNS = (
    "batch<7|events>8|wall s>9.3f|status>8|stored>8|dup>5|unmatched>11|rows added>12|cpu ms>8.0f|verified>10"
)
SINGLES_COLUMNS = (
    "sent>7|answered 200>14|errors>8|req/s>8.1f|p50 ms>8.1f|p99 ms>8.1f|max ms>8.1f|stored>8|lost>6|dup>5"
    "|gunicorn ms>13.2f|pg ms>7.2f|client ms>11.2f|other load>12.0%"
)


@dataclass(frozen=True)
class EventTargets:
    """One account per provider, its credential in the fake provider's hands, and the emails it has sent."""

    port: int
    sendgrid: SendGridEvents
    sendgrid_account: Any  # accounts.models.Account; Django is imported only once it is set up
    sendgrid_messages: list[str]  # provider message ids of the account's seeded email jobs
    postmark: PostmarkEvents
    postmark_account: Any
    postmark_messages: list[str]
    # Postmark's bounce IDs, one per event sent in the run: no two requests carry the same event.
    postmark_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def path(self, slug: str) -> str:
        account = self.sendgrid_account if slug == "sendgrid" else self.postmark_account
        return f"/api/v1/webhooks/{slug}/{account.public_id}"

    def sendgrid_batch(self, size: int) -> ProviderPost:
        """``size`` new events (each with a fresh sg_event_id) over the seeded messages, signed now."""
        messages, kinds = self.sendgrid_messages, SENDGRID_KINDS
        batch = [
            self.sendgrid.event(kinds[n % len(kinds)], anymail_id=messages[n % len(messages)]) for n in range(size)
        ]
        return self.sendgrid.batch(batch)

    def postmark_single(self) -> tuple[str, ProviderPost]:
        """A hard bounce of a seeded message under a bounce ID of its own: (that ID, which its row keeps; the POST)."""
        event_id = next(self.postmark_ids)
        message = self.postmark_messages[event_id % len(self.postmark_messages)]
        return str(event_id), self.postmark.deliver(self.postmark.event("Bounce", message_id=message, ID=event_id))


def seed_sent_emails(account: Any, provider: str, count: int) -> list[str]:
    """``count`` email jobs of ``account`` as the worker leaves them once ``provider`` took the message: completed,
    one successful delivery log under the provider's message id. Returns the message ids."""
    from notifications.models import DeliveryLog, DeliveryStatus, Job, JobStatus, JobType

    payload = {"to": "user@example.com", "subject": "Welcome", "body": "<p>Hi</p>"}
    jobs = Job.objects.bulk_create(
        Job(account=account, type=JobType.EMAIL, status=JobStatus.COMPLETED, payload=payload, attempts=1)
        for _ in range(count)
    )
    logs = DeliveryLog.objects.bulk_create(
        DeliveryLog(
            job=job,
            attempt=1,
            status=DeliveryStatus.SUCCESS,
            used_provider=provider,
            provider_message_id=str(uuid.uuid4()),
        )
        for job in jobs
    )
    return [str(log.provider_message_id) for log in logs]


def seed_event_targets(args: argparse.Namespace) -> EventTargets:
    from django.db import connection

    from webhooks_inbound.services import postmark_password_generate, sendgrid_key_set

    sendgrid_account, postmark_account = (seeded.account for seeded in seed_accounts(2, prefix="events"))
    sendgrid = SendGridEvents()
    sendgrid_key_set(account=sendgrid_account, verification_key=sendgrid.verification_key)
    postmark = PostmarkEvents(postmark_password_generate(account=postmark_account))
    targets = EventTargets(
        args.port,
        sendgrid,
        sendgrid_account,
        seed_sent_emails(sendgrid_account, "SENDGRID", args.jobs),
        postmark,
        postmark_account,
        seed_sent_emails(postmark_account, "POSTMARK", args.jobs),
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the jobs and logs came after seed_accounts' ANALYZE
    return targets


def rows_of(account: Any, provider: str) -> int:
    from webhooks_inbound.models import EmailEvent

    return EmailEvent.objects.filter(account=account, provider=provider).count()


def post_events(port: int, path: str, delivery: ProviderPost) -> tuple[int, dict[str, Any], float]:
    """One provider POST on a new connection: (status, the answer's envelope, seconds from request to answer read)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.monotonic()
    try:
        connection.request("POST", path, body=delivery.body, headers={**API_HEADERS, **delivery.headers})
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException) as error:
        raise BenchError(f"POST {path} failed: {error}") from error
    finally:
        connection.close()
    seconds = time.monotonic() - started
    try:
        envelope = json.loads(body)
    except ValueError:
        envelope = {"body": body[:300].decode("latin-1")}
    return response.status, envelope, seconds


def first_answers(t: EventTargets, web: Proc) -> None:
    """One event to each receiver, which must store it: a broken server or credential fails loudly here instead of
    as a table of errors."""
    for slug, delivery in (("postmark", t.postmark_single()[1]), ("sendgrid", t.sendgrid_batch(1))):
        status, envelope, _ = post_events(t.port, t.path(slug), delivery)
        if status != 200 or envelope.get("data", {}).get("stored") != 1:
            raise BenchError(f"the {slug} receiver answered {status}: {envelope}; see {web.log_path}")


@dataclass(frozen=True)
class BatchRun:
    number: int
    events: int
    seconds: float  # from connecting to the answer read: the batch is stored and committed by then
    status: int
    counts: dict[str, int]  # the answer's: received, stored, duplicates, unmatched, ignored
    rows_added: int
    cpu_ms: float  # gunicorn's CPU over the batch

    @property
    def verified(self) -> bool:
        return self.status == 200 and self.counts.get("stored") == self.rows_added == self.events

    def row(self) -> tuple[Any, ...]:
        stored, duplicates, unmatched = (self.counts.get(name, 0) for name in ("stored", "duplicates", "unmatched"))
        tail = self.rows_added, self.cpu_ms, "yes" if self.verified else "NO"
        return self.number, self.events, self.seconds, self.status, stored, duplicates, unmatched, *tail


def post_sendgrid_batch(t: EventTargets, web: Proc, number: int, size: int) -> BatchRun:
    delivery = t.sendgrid_batch(size)
    rows_before, before = rows_of(t.sendgrid_account, "SENDGRID"), Sample.take(server=web.cpu)
    status, envelope, seconds = post_events(t.port, t.path("sendgrid"), delivery)
    cpu = Sample.take(server=web.cpu).cpu_since(before)["server"]
    rows_added = rows_of(t.sendgrid_account, "SENDGRID") - rows_before
    return BatchRun(number, size, seconds, status, envelope.get("data") or {}, rows_added, cpu * 1000)


@dataclass(frozen=True)
class Answer:
    event_id: str
    status: int
    # From the moment the request was due, not sent: a stall delays the requests behind it, and that counts.
    latency_ms: float
    counts: dict[str, int]  # the envelope's, on a 200


@dataclass(frozen=True)
class PostmarkLoad:
    sent: list[str]  # event ids, one per request, answered or not
    answers: list[Answer]
    errors: Counter[str]
    seconds: float  # from the first request's due time to the last answer
    cpu_ms: dict[str, float]  # CPU per request of gunicorn, PostgreSQL (every backend) and the bench's client
    other_load: float  # share of all CPUs used by other processes: on a shared machine, what the run competed with


def postmark_load(t: EventTargets, args: argparse.Namespace, web: Proc, seconds: float) -> PostmarkLoad:
    """Postmark events at ``--rate`` a second, open loop: request i is due at start + i / rate whatever happened
    before it, shared by ``--senders`` threads, each on its own keep-alive connection."""
    total, rate, senders = round(args.rate * seconds), args.rate, args.senders
    requests = [t.postmark_single() for _ in range(total)]  # built before the clock starts, so the client stays lean
    answers: list[Answer] = []
    errors: Counter[str] = Counter()
    sources = {"server": web.cpu, "postgres": lambda: command_cpu("postgres"), "client": time.process_time}
    before = Sample.take(**sources)
    lock, start = threading.Lock(), time.monotonic() + 0.1

    def sender(first: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", t.port, timeout=30)
        for number in range(first, total, senders):
            due = start + number / rate
            time.sleep(max(0.0, due - time.monotonic()))
            event_id, delivery = requests[number]
            try:
                headers = {**API_HEADERS, **delivery.headers}
                connection.request("POST", t.path("postmark"), body=delivery.body, headers=headers)
                response = connection.getresponse()
                body, answered_at = response.read(), time.monotonic()
            except (OSError, http.client.HTTPException) as error:
                # Not retried: the event counts as lost unless the server stored it anyway.
                with lock:
                    errors[type(error).__name__] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", t.port, timeout=30)
                continue
            counts = json.loads(body)["data"] if response.status == 200 else {}
            with lock:
                answers.append(Answer(event_id, response.status, (answered_at - due) * 1000, counts))
                if response.status != 200:
                    errors[f"status {response.status}"] += 1
        connection.close()

    threads = [threading.Thread(target=sender, args=(first,), daemon=True) for first in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = Sample.take(**sources)
    cpu = after.cpu_since(before)
    return PostmarkLoad(
        [event_id for event_id, _ in requests],
        answers,
        errors,
        seconds=after.at - start,
        cpu_ms={name: spent * 1000 / max(total, 1) for name, spent in cpu.items()},
        other_load=max(0.0, after.busy_since(before) - after.share_since(before, sum(cpu.values()))),
    )


@dataclass(frozen=True)
class SinglesRun:
    load: PostmarkLoad
    stored: int  # of the events sent, those with a row
    extra_rows: int  # rows the run added beyond one per event sent

    @property
    def lost(self) -> int:
        return len(self.load.sent) - self.stored

    @property
    def duplicates(self) -> int:
        """Events stored twice, or answered as seen before although each was sent once."""
        return self.extra_rows + sum(answer.counts.get("duplicates", 0) for answer in self.load.answers)

    def row(self) -> tuple[Any, ...]:
        load = self.load
        answered = sum(answer.status == 200 for answer in load.answers)
        head = len(load.sent), answered, load.errors.total(), len(load.answers) / load.seconds
        latencies = [answer.latency_ms for answer in load.answers]
        quantiles = percentile(latencies, 0.50), percentile(latencies, 0.99), max(latencies, default=math.nan)
        cpu = (load.cpu_ms[name] for name in ("server", "postgres", "client"))
        return *head, *quantiles, self.stored, self.lost, self.duplicates, *cpu, load.other_load


def singles_counted(t: EventTargets, load: PostmarkLoad, rows_before: int) -> SinglesRun:
    """The rows behind a load, counted once gunicorn has stopped: a request the client gave up on may have landed."""
    from webhooks_inbound.models import EmailEvent

    rows = EmailEvent.objects.filter(account=t.postmark_account, provider="POSTMARK")
    stored = rows.filter(provider_event_id__in=load.sent).values("provider_event_id").distinct().count()
    return SinglesRun(load, stored, extra_rows=rows.count() - rows_before - stored)


def report_events(args: argparse.Namespace, batches: list[BatchRun], singles: SinglesRun) -> None:
    print(f"\nevents: SendGrid, {len(batches)} signed batches of {args.batch_size} events, one after another")
    table(BATCH_COLUMNS, [batch.row() for batch in batches])
    seconds = [batch.seconds for batch in batches]
    print(f"  wall time: min {min(seconds):.3f} s, median {median(seconds):.3f} s, max {max(seconds):.3f} s")
    print(f"\nevents: Postmark, one event a request at {args.rate:g}/s for {args.duration:g} s, open loop")
    table(SINGLES_COLUMNS, [singles.row()])
    if singles.load.errors:
        print(f"  errors: {dict(singles.load.errors)}")
    if len(singles.load.answers) / singles.load.seconds < 0.95 * args.rate:
        print("  note: answers came slower than the requested rate (the receiver fell behind)")
    if singles.load.other_load > 0.10:
        print(f"  note: other processes used {singles.load.other_load:.0%} of the CPUs during the load; re-run")
    print()
    slowest, verified = max(seconds), sum(batch.verified for batch in batches)
    verdict("slowest SendGrid batch", f"{slowest:.3f} s", f"< {MAX_BATCH_SECONDS:g} s", slowest < MAX_BATCH_SECONDS)
    verdict("every batch stored, verified", f"{verified}/{len(batches)}", "all", verified == len(batches))
    p99 = percentile([answer.latency_ms for answer in singles.load.answers], 0.99)
    verdict("Postmark p99 from due time", f"{p99:.1f} ms", f"< {MAX_SINGLE_P99_MS:.0f} ms", p99 < MAX_SINGLE_P99_MS)
    verdict("Postmark events lost", str(singles.lost), "0", singles.lost == 0)
    verdict("Postmark events stored twice", str(singles.duplicates), "0", singles.duplicates == 0)


def events(args: argparse.Namespace) -> None:
    log(f"events: {args.batches} SendGrid batches of {args.batch_size}, Postmark at {args.rate:g}/s")
    fresh_services(args.database_url, args.redis_url)
    try:
        log(f"events: seeding two accounts, {args.jobs} sent emails each")
        targets = seed_event_targets(args)
        with gunicorn("gunicorn-events", args.port) as web:
            first_answers(targets, web)
            # Warm-up: every worker loads the receivers' views and opens its database connection on its first request.
            postmark_load(targets, args, web, args.warmup)
            wait_for_quiet(args.quiet_wait)
            log(f"events: {args.batches} SendGrid batches")
            batches = [post_sendgrid_batch(targets, web, n, args.batch_size) for n in range(1, args.batches + 1)]
            wait_for_quiet(args.quiet_wait)
            log(f"events: Postmark singles, {args.rate:g}/s for {args.duration:g} s")
            rows_before = rows_of(targets.postmark_account, "POSTMARK")
            load = postmark_load(targets, args, web, args.duration)
        singles = singles_counted(targets, load, rows_before)
    finally:
        flush_redis(args.redis_url)
    report_events(args, batches, singles)


# --- Command line -------------------------------------------------------------------------------------------

BENCHES: dict[str, Callable[[argparse.Namespace], None]] = {
    "accept": accept,
    "delivery": delivery,
    "email": email,
    "events": events,
    "dashboard": dashboard,
    "purge": purge,
}


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    option(common, "database-url", "postgres://postgres@127.0.0.1:5432/notifyhub_bench", "recreated on every run")
    option(common, "redis-url", "redis://127.0.0.1:6379/14", "flushed at start and end")
    option(common, "quiet-wait", 60.0, "before each measured run, wait up to this long for other work to stop")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="{accept,delivery,email,events,dashboard,purge,all}")
    sub = commands.add_parser("accept", parents=[common], help="the accept path against its floor")
    option(sub, "duration", 20, "measured seconds per server", env="accept")
    option(sub, "warmup", 3, "warm-up seconds per server", env="accept")
    option(sub, "rounds", 3, "app then floor, this many times; the verdicts take the medians", env="accept")
    option(sub, "connections", 16, "wrk connections", env="accept")
    option(sub, "wrk-threads", 2, "wrk threads (wrk shares the CPUs with the servers)", env="accept")
    option(sub, "port", 8771, "gunicorn's port", env="accept")
    option(sub, "against", "", "a git revision run in the floor's place: before against after", env="accept")
    option(
        sub,
        "request-log",
        "off",
        "off: no line per request on either side; on: each side's own default (with --against)",
        env="accept",
        choices=["off", "on"],
    )
    sub = commands.add_parser("delivery", parents=[common], help="webhook delivery against its floor, and latency")
    option(sub, "jobs", 5000, "jobs per throughput run", env="delivery")
    option(sub, "rounds", 3, "app then floor, this many times; the verdict takes the median ratio", env="delivery")
    option(sub, "pool", "threads", "worker pool", env="delivery", choices=["threads", "prefork"])
    option(sub, "concurrency", 8, "worker concurrency", env="delivery")
    option(sub, "processes", 2, "worker processes side by side (one per core)", env="delivery")
    option(sub, "rate", 100.0, "latency: API requests a second", env="delivery")
    option(sub, "duration", 20.0, "latency: seconds of load", env="delivery")
    option(sub, "warmup", 3.0, "latency: warm-up seconds", env="delivery")
    option(sub, "port", 8771, "gunicorn's port", env="delivery")
    option(sub, "receiver-port", 8743, "the HTTPS receiver's port", env="delivery")
    option(
        sub,
        "receiver-connections",
        "keep",
        "keep: the receiver keeps connections alive; close: it hangs up after each delivery",
        env="delivery",
        choices=["keep", "close"],
    )
    option(sub, "against", "", "a git revision whose workers take the floor's place (no latency phase)", env="delivery")
    sub = commands.add_parser("email", parents=[common], help="an email job against a webhook job")
    option(sub, "jobs", 200, "jobs of each type", env="email")
    option(sub, "rounds", 3, "with --against: this code then the revision, this many times", env="email")
    option(sub, "against", "", "a git revision whose worker runs the same jobs, rounds alternating", env="email")
    sub = commands.add_parser("events", parents=[common], help="the provider-event receivers: batches and singles")
    option(sub, "batches", 5, "SendGrid batches, one after another", env="events")
    option(sub, "batch-size", 1000, "events per SendGrid batch", env="events")
    option(sub, "rate", 200.0, "Postmark: requests a second", env="events")
    option(sub, "duration", 20.0, "Postmark: seconds of load", env="events")
    option(sub, "warmup", 3.0, "Postmark: warm-up seconds, before the batches", env="events")
    option(sub, "senders", 32, "Postmark: client threads, each on its own connection", env="events")
    option(sub, "jobs", 500, "sent emails seeded per provider, which the events name", env="events")
    option(sub, "port", 8771, "gunicorn's port", env="events")
    sub = commands.add_parser("dashboard", parents=[common], help="the holder's reads with a million jobs, one by one")
    option(sub, "jobs", 1_000_000, "jobs of the account whose pages are read", env="dashboard")
    option(sub, "other-jobs", 1_000_000, "jobs of the other accounts, in the same table", env="dashboard")
    option(sub, "other-accounts", 50, "accounts sharing the other jobs", env="dashboard")
    option(sub, "requests", 20, "measured requests an endpoint, one after another", env="dashboard")
    option(sub, "warmup", 2, "unmeasured requests an endpoint before them", env="dashboard")
    option(sub, "port", 8771, "gunicorn's port", env="dashboard")
    sub = commands.add_parser("purge", parents=[common], help="purgejobs on a million old jobs while sends go on")
    option(sub, "jobs", 1_000_000, "finished jobs older than the cutoff, three delivery logs each", env="purge")
    option(sub, "kept", 20_000, "jobs the purge must leave: recent finished ones, 5% old unfinished", env="purge")
    option(sub, "events", 100_000, "email events on the old email jobs", env="purge")
    option(sub, "accounts", 40, "accounts sharing the jobs, whose keys send", env="purge")
    option(sub, "older-than", 90, "purgejobs --older-than DAYS", env="purge")
    option(sub, "rate", 50.0, "sends a second through the API", env="purge")
    option(sub, "alone", 10.0, "seconds of sends before the purge starts", env="purge")
    option(sub, "warmup", 3.0, "warm-up seconds of sends, unmeasured", env="purge")
    option(sub, "port", 8771, "gunicorn's port", env="purge")
    commands.add_parser("all", parents=[common], help="the six in turn (the default)")
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv or ["all"])
    if args.command != "all":
        return bench_main(lambda: BENCHES[args.command](args))
    common = ["--database-url", args.database_url, "--redis-url", args.redis_url, "--quiet-wait", str(args.quiet_wait)]
    for name, bench in BENCHES.items():
        status = bench_main(lambda bench=bench, name=name: bench(parser.parse_args([name, *common])))
        if status:
            return status
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
