"""Webhook delivery benchmark: the app's Celery worker against its floor, then latency at a steady rate.

Run: .venv/bin/python bench/delivery.py        (bench/README.md explains what is measured and how to read it)

1. Throughput, per worker configuration: 5,000 webhook jobs, stored with notifications.services.webhook_job_create
   in one transaction whose commit enqueues them all, delivered by `celery --app notifyhub worker` (the Procfile's
   command) to a local HTTPS receiver. Then the floor: the same worker command running bench/delivery_floor.py,
   a bare task that POSTs the same signed body to the same receiver with a pooled session and no database.
   The clock runs from the first enqueue to the last arrival; the receiver counts each X-Webhook-Id's arrivals.
2. Latency: jobs sent through the real API under gunicorn (gunicorn.conf.py) at a steady rate, with the first
   worker configuration; accept-to-arrival is the receiver's arrival time minus the moment the client read the 202.

Everything runs against its own PostgreSQL database (recreated) and Redis DB (flushed), with state in
var/bench-delivery. Knobs (environment, or the matching --option): BENCH_DELIVERY_JOBS, BENCH_WORKER_CONFIGS
(e.g. "threads:8:2,prefork:4": POOL:CONCURRENCY[:PROCESSES]), BENCH_LATENCY_RATE, BENCH_LATENCY_SECONDS,
BENCH_WARMUP_SECONDS, BENCH_WORKER_LOGLEVEL, BENCH_DELIVERY_DATABASE_URL, BENCH_DELIVERY_REDIS_URL,
BENCH_RECEIVER_PORT, BENCH_DELIVERY_APP_PORT, BENCH_STALL_SECONDS, BENCH_QUIET_WAIT, BENCH_APP_SETTINGS (a settings
module for the app's processes, default notifyhub.settings).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `python bench/delivery.py` puts bench/, not the project, on the path

from bench.common import (  # noqa: E402
    BenchError,
    bench_main,
    flush_redis,
    reset_database,
    wait_until_listening,
)
from bench.delivery_load import Plan, paced_load  # noqa: E402
from bench.delivery_procs import (  # noqa: E402
    Group,
    Groups,
    TlsFiles,
    command_cpu_seconds,
    machine_ticks,
    make_tls_files,
    require_free_port,
    running,
    self_cpu_seconds,
)
from bench.delivery_receiver import Dump, ReceiverClient  # noqa: E402
from bench.delivery_report import (  # noqa: E402
    Latency,
    Throughput,
    WorkerConfig,
    print_latency,
    print_notes,
    print_throughput,
)

VAR_DIR = ROOT / "var" / "bench-delivery"
BIN = Path(sys.executable).parent
# The production recommendation: the Procfile's worker line (threads pool, concurrency 8) run as one process per
# core, 2 on the 2-core reference machine. bench/README.md records the configurations measured against it.
DEFAULT_CONFIGS = "threads:8:2"
# A realistic small event, the same bytes for the app and the floor.
PAYLOAD: dict[str, Any] = {
    "event": "invoice.paid",
    "data": {"invoice": "in_1PZt7x2eZvKYlo2C", "customer": "cus_Q8xb4kz", "amount": 4200, "currency": "eur"},
    "note": "NotifyHub delivery benchmark",
}
# A Startup key may make 200 requests a minute: plan for 150 so none is ever limited.
REQUESTS_PER_KEY = 150
MIN_ACCOUNTS = 40
# Startup quota is 15,000 webhooks a month per account; stay well under it when spreading throughput jobs.
JOBS_PER_ACCOUNT = 10_000
# Below this share of both CPUs busy, with the bench's own processes idle, the machine counts as quiet.
QUIET_BUSY = 0.10


@dataclass(frozen=True)
class Options:
    jobs: int
    configs: tuple[WorkerConfig, ...]
    rate: float
    seconds: float
    warmup_seconds: float
    loglevel: str
    database_url: str
    redis_url: str
    receiver_port: int
    app_port: int
    stall_seconds: float
    quiet_wait: float
    throughput: bool
    floor: bool
    latency: bool
    rounds: int

    @property
    def account_count(self) -> int:
        api_requests = self.rate * min(60.0, self.warmup_seconds + self.seconds) if self.latency else 0
        direct_jobs = (self.jobs + 200) * len(self.configs) * self.rounds if self.throughput else 0
        return max(MIN_ACCOUNTS, math.ceil(api_requests / REQUESTS_PER_KEY), math.ceil(direct_jobs / JOBS_PER_ACCOUNT))


# --- Options ---------------------------------------------------------------------------


def _env(name: str, default: str) -> str:
    return os.environ.get(name, "").strip() or default


def _configs(text: str) -> tuple[WorkerConfig, ...]:
    try:
        return tuple(WorkerConfig.parse(item) for item in text.split(",") if item.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=int(_env("BENCH_DELIVERY_JOBS", "5000")))
    parser.add_argument(
        "--configs",
        type=_configs,
        default=_configs(_env("BENCH_WORKER_CONFIGS", DEFAULT_CONFIGS)),
        help="worker configurations to measure, POOL:CONCURRENCY[:PROCESSES], e.g. threads:8:2,prefork:4; "
        "latency uses the first",
    )
    parser.add_argument("--rate", type=float, default=float(_env("BENCH_LATENCY_RATE", "100")))
    parser.add_argument("--seconds", type=float, default=float(_env("BENCH_LATENCY_SECONDS", "20")))
    parser.add_argument("--warmup-seconds", type=float, default=float(_env("BENCH_WARMUP_SECONDS", "3")))
    parser.add_argument("--loglevel", default=_env("BENCH_WORKER_LOGLEVEL", "INFO"), help="as in the Procfile")
    parser.add_argument(
        "--database-url",
        default=_env("BENCH_DELIVERY_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/notifyhub_bench_delivery"),
    )
    parser.add_argument("--redis-url", default=_env("BENCH_DELIVERY_REDIS_URL", "redis://127.0.0.1:6379/13"))
    parser.add_argument("--receiver-port", type=int, default=int(_env("BENCH_RECEIVER_PORT", "8743")))
    parser.add_argument("--app-port", type=int, default=int(_env("BENCH_DELIVERY_APP_PORT", "8773")))
    parser.add_argument(
        "--stall-seconds",
        type=float,
        default=float(_env("BENCH_STALL_SECONDS", "30")),
        help="stop waiting for deliveries after this long without a new arrival",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=float(_env("BENCH_QUIET_WAIT", "120")),
        help="before each run, wait up to this long for other work on the machine to stop",
    )
    parser.add_argument("--no-throughput", dest="throughput", action="store_false", help="skip the 5,000-job runs")
    parser.add_argument("--no-floor", dest="floor", action="store_false", help="skip the floor runs")
    parser.add_argument("--no-latency", dest="latency", action="store_false", help="skip the latency phase")
    parser.add_argument(
        "--rounds",
        type=int,
        default=int(_env("BENCH_DELIVERY_ROUNDS", "3")),
        help="throughput runs per configuration, app then floor each time; the verdict takes the median ratio",
    )
    args = parser.parse_args(argv)
    if not args.configs:
        parser.error("give at least one worker configuration")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return Options(**{name: (tuple(value) if name == "configs" else value) for name, value in vars(args).items()})


# --- Services: a fresh database, an empty Redis DB, migrations, accounts ------------------------


def bench_environment(options: Options, tls: TlsFiles, floor_secret: str) -> dict[str, str]:
    """What every process of the run sees: the bench's database, Redis DB, state dir, and a reachable receiver."""
    return {
        **os.environ,
        "DATABASE_URL": options.database_url,
        "REDIS_URL": options.redis_url,
        "NOTIFYHUB_VAR_DIR": str(VAR_DIR),
        # Another module (importing notifyhub.settings and changing one thing) tries a change without editing the app.
        "DJANGO_SETTINGS_MODULE": _env("BENCH_APP_SETTINGS", "notifyhub.settings"),
        "DEBUG": "false",
        # The receiver is on 127.0.0.1. Production keeps the IP filter on (one getaddrinfo per delivery).
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "WEBHOOK_CA_BUNDLE": str(tls.ca),
        "GUNICORN_ACCESS_LOG": "off",
        "BENCH_FLOOR_CA_BUNDLE": str(tls.bundle),
        "BENCH_FLOOR_SECRET": floor_secret,
    }


def migrate(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise BenchError(f"migrate failed:\n{done.stdout}{done.stderr}")


@dataclass(frozen=True)
class Seeded:
    account: Any  # accounts.models.Account; Django is imported only once it is set up
    api_key: str
    secret: str


def seed_accounts(count: int) -> list[Seeded]:
    """Startup accounts, each with an API key and a signing secret, so every delivery is signed."""
    from django.db import connection, transaction

    from accounts.services import account_create, signing_secret_generate

    seeded = []
    with transaction.atomic():
        for number in range(count):
            account, api_key = account_create(email=f"delivery{number}@bench.example", plan="startup")
            seeded.append(Seeded(account, api_key, signing_secret_generate(account=account)))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh tables have no statistics; give the planner real ones
    return seeded


# --- The run's context ---------------------------------------------------------------------


@dataclass
class Context:
    options: Options
    env: dict[str, str]
    tls: TlsFiles
    floor_secret: str
    receiver: ReceiverClient
    receiver_group: Group
    accounts: list[Seeded] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.options.receiver_port}/hooks/bench"

    def log(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Snapshot:
    """CPU counters at one moment, so a run's share of the machine can be told apart from its set-up."""

    at: float
    ticks: tuple[int, int]
    worker_cpu: float
    receiver_cpu: float
    postgres_cpu: float
    web_cpu: float = 0.0
    bench_cpu: float = 0.0  # this process: job creation or the load client, and polling the receiver

    @classmethod
    def take(cls, worker: Groups, receiver: Group, web: Group | None = None) -> Snapshot:
        return cls(
            time.monotonic(),
            machine_ticks(),
            worker.cpu_seconds(),
            receiver.cpu_seconds(),
            command_cpu_seconds("postgres"),
            web.cpu_seconds() if web else 0.0,
            self_cpu_seconds(),
        )

    def cpu_since(self, earlier: Snapshot) -> dict[str, float]:
        return {
            "gunicorn": self.web_cpu - earlier.web_cpu,
            "worker": self.worker_cpu - earlier.worker_cpu,
            "postgres": self.postgres_cpu - earlier.postgres_cpu,
            "receiver": self.receiver_cpu - earlier.receiver_cpu,
            "bench client": self.bench_cpu - earlier.bench_cpu,
        }

    def busy_since(self, earlier: Snapshot) -> float:
        total = self.ticks[0] - earlier.ticks[0]
        return 1 - (self.ticks[1] - earlier.ticks[1]) / total if total else 0.0


def idle_busy_share(worker: Groups, receiver: Group, seconds: float = 1.0) -> float:
    """How busy the machine is while the bench's own processes wait: other work that will skew the run."""
    before = Snapshot.take(worker, receiver)
    time.sleep(seconds)
    return Snapshot.take(worker, receiver).busy_since(before)


def wait_for_quiet(ctx: Context, worker: Groups, receiver: Group) -> float:
    """Waits (up to --quiet-wait seconds) for other work on the box to stop; returns the last idle busy share.

    On a shared machine another benchmark or test run can take both cores; starting then measures them, not us.
    """
    deadline = time.monotonic() + ctx.options.quiet_wait
    busy = idle_busy_share(worker, receiver)
    while busy > QUIET_BUSY and time.monotonic() < deadline:
        ctx.log(f"machine {busy:.0%} busy with other work; waiting for it to quieten")
        busy = idle_busy_share(worker, receiver, seconds=2.0)
    return busy


# --- Workers ---------------------------------------------------------------------------------


def worker_command(app_module: str, config: WorkerConfig, loglevel: str) -> list[str]:
    """The Procfile's worker line with the bench's pool and concurrency."""
    return [str(BIN / "celery"), "--app", app_module, "worker", "--loglevel", loglevel, *config.celery_args]


@contextlib.contextmanager
def worker(ctx: Context, target: str, config: WorkerConfig) -> Iterator[Groups]:
    """The worker process type, scaled to ``config.processes`` processes; stopped (every group) on exit."""
    env = dict(ctx.env)
    app_module = "notifyhub"
    if target == "floor":
        app_module = "bench.delivery_floor"
        # One pooled connection per thread, so the floor never throws one away; a prefork child needs one.
        env["BENCH_FLOOR_POOL_SIZE"] = str(config.concurrency if config.pool == "threads" else 1)
        env.pop("DJANGO_SETTINGS_MODULE", None)
    command = worker_command(app_module, config, ctx.options.loglevel)
    name = f"worker-{target}-{config.pool}-{config.concurrency}"
    with contextlib.ExitStack() as stack:
        members = []
        for number in range(config.processes):
            # Side by side, each worker needs a node name of its own (Celery warns about duplicates otherwise).
            hostname = ["--hostname", f"{target}{number}@%h"] if config.processes > 1 else []
            log_path = VAR_DIR / f"{name}{f'-{number}' if config.processes > 1 else ''}.log"
            members.append(
                stack.enter_context(
                    running(f"{target} worker", [*command, *hostname], cwd=ROOT, env=env, log_path=log_path)
                )
            )
        yield Groups(tuple(members))


# --- Throughput ------------------------------------------------------------------------------


def create_app_jobs(ctx: Context, count: int, on_commit: Callable[[], None] = lambda: None) -> list[str]:
    """Stores ``count`` webhook jobs the way the API does; all are enqueued when the one transaction commits.

    ``on_commit`` is registered before any job, so it runs after COMMIT and before the first enqueue.
    """
    from django.db import transaction

    from notifications.services import webhook_job_create

    ids = []
    with transaction.atomic():
        transaction.on_commit(on_commit)
        for number in range(count):
            account = ctx.accounts[number % len(ctx.accounts)].account
            ids.append(str(webhook_job_create(account=account, url=ctx.url, payload=PAYLOAD).id))
    return ids


def enqueue_floor(ctx: Context, count: int, on_start: Callable[[], None] = lambda: None) -> list[str]:
    from bench.delivery_floor import FLOOR_TASK
    from bench.delivery_floor import app as floor_app

    ids = [str(uuid.uuid4()) for _ in range(count)]
    on_start()
    for delivery_id in ids:
        # Broker priority 5: what notifications.queue sends for a normal-priority job.
        floor_app.send_task(FLOOR_TASK, args=[delivery_id, ctx.url, PAYLOAD], priority=5)
    return ids


def _enqueue(ctx: Context, target: str, count: int, on_start: Callable[[], None] = lambda: None) -> list[str]:
    if target == "app":
        return create_app_jobs(ctx, count, on_start)
    return enqueue_floor(ctx, count, on_start)


def warm_up(ctx: Context, target: str, config: WorkerConfig, group: Groups) -> int:
    """Every thread or child imports lazily and opens its connections on its first tasks: do that before timing.

    Returns how many warm-up jobs did not arrive. A failed first attempt is retried minutes later, so the
    bench notes it rather than wait; none arriving at all means the worker is broken.
    """
    ids = _enqueue(ctx, target, max(50, 4 * config.concurrency * config.processes))
    dump = ctx.receiver.wait_for(ids, stall_seconds=10, start_grace=60)
    group.check_alive()
    missing = sum(1 for delivery_id in ids if delivery_id not in dump.arrivals)
    if missing == len(ids):
        raise BenchError(f"{target} worker ({config.label}) delivered none of its warm-up jobs; see {group.log_path}")
    if missing:
        ctx.log(f"{target} worker {config.label}: {missing} warm-up job(s) did not arrive; see {group.log_path}")
    return missing


def db_completed(ids: list[str], *, wait_seconds: float = 10.0) -> int:
    """Jobs among ``ids`` the database shows completed, waiting a little: the row is written after the POST."""
    from notifications.models import Job, JobStatus

    deadline = time.monotonic() + wait_seconds
    while True:
        completed = Job.objects.filter(id__in=ids, status=JobStatus.COMPLETED).count()
        if completed == len(ids) or time.monotonic() > deadline:
            return completed
        time.sleep(0.2)


def db_sessions() -> int:
    """Connections ever opened to the bench database: new ones per delivery show up here."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def check_signatures(dump: Dump, secrets: list[str]) -> tuple[int, int]:
    """Of the receiver's sampled requests, how many carry the expected body, signed with one of ``secrets``."""
    from notifyhub.api.fields import json_bytes
    from notifyhub.signing import verify_signature

    body = json_bytes(PAYLOAD)
    good = sum(
        1
        for sample in dump.samples
        if sample["body"].encode() == body
        and any(verify_signature(secret, sample["signature"], body) for secret in secrets)
    )
    return good, len(dump.samples)


def throughput(ctx: Context, target: str, config: WorkerConfig, *, round_number: int) -> Throughput:
    ctx.log(f"{target} worker {config.label}: starting, warming up")
    with worker(ctx, target, config) as group:
        warm_missing = warm_up(ctx, target, config, group)
        ctx.receiver.reset()
        busy_before = wait_for_quiet(ctx, group, ctx.receiver_group)
        sessions_before = db_sessions() if target == "app" else 0
        marks: list[Snapshot] = []
        ctx.log(f"{target} worker {config.label}: queueing {ctx.options.jobs} jobs")
        ids = _enqueue(ctx, target, ctx.options.jobs, lambda: marks.append(Snapshot.take(group, ctx.receiver_group)))
        dump = ctx.receiver.wait_for(ids, stall_seconds=ctx.options.stall_seconds)
        end = Snapshot.take(group, ctx.receiver_group)
        group.check_alive()
    start = marks[0]
    first = dump.first_arrivals(ids)
    secrets = [ctx.floor_secret] if target == "floor" else [seeded.secret for seeded in ctx.accounts]
    result = Throughput(
        target=target,
        config=config,
        round_number=round_number,
        jobs=len(ids),
        arrived=len(first),
        duplicates=dump.duplicates(ids),
        strangers=dump.strangers(ids),
        seconds=(max(first.values()) - start.at) if first else math.nan,
        worker_cpu=end.worker_cpu - start.worker_cpu,
        receiver_cpu=end.receiver_cpu - start.receiver_cpu,
        postgres_cpu=end.postgres_cpu - start.postgres_cpu,
        busy=end.busy_since(start),
        busy_before=busy_before,
        signatures=check_signatures(dump, secrets),
        unsigned=dump.unsigned,
        db_completed=db_completed(ids) if target == "app" else None,
        db_connections=db_sessions() - sessions_before if target == "app" else None,
        warm_missing=warm_missing,
    )
    ctx.log(f"{target} worker {config.label}: {result.rate:.1f} deliveries/s, {result.missing} missing")
    return result


# --- Latency ---------------------------------------------------------------------------------


@contextlib.contextmanager
def web_server(ctx: Context) -> Iterator[Group]:
    """gunicorn with the production settings file, as the Procfile's web line starts it."""
    port = ctx.options.app_port
    require_free_port(port, "API server")
    env = {**ctx.env, "GUNICORN_BIND": f"127.0.0.1:{port}"}
    command = [str(BIN / "gunicorn"), "notifyhub.wsgi", "--config", str(ROOT / "gunicorn.conf.py")]
    with running("gunicorn", command, cwd=ROOT, env=env, log_path=VAR_DIR / "gunicorn.log") as group:
        wait_until_listening(group.process, port, "gunicorn", group.log_path)
        yield group


def _plan(ctx: Context, seconds: float) -> Plan:
    keys = [seeded.api_key for seeded in ctx.accounts]
    return Plan(ctx.options.app_port, keys, ctx.url, PAYLOAD, ctx.options.rate, seconds)


def latency(ctx: Context, config: WorkerConfig) -> Latency:
    options = ctx.options
    ctx.log(f"latency: gunicorn + worker {config.label}, {options.rate:g}/s for {options.seconds:g} s")
    with web_server(ctx) as web, worker(ctx, "app", config) as group:
        warm = paced_load(_plan(ctx, options.warmup_seconds))
        ctx.receiver.wait_for([job.job_id for job in warm.accepted], stall_seconds=10, start_grace=60)
        group.check_alive()
        ctx.receiver.reset()
        busy_before = wait_for_quiet(ctx, group, ctx.receiver_group)
        start = Snapshot.take(group, ctx.receiver_group, web)
        load = paced_load(_plan(ctx, options.seconds))
        loaded = Snapshot.take(group, ctx.receiver_group, web)
        ids = [job.job_id for job in load.accepted]
        dump = ctx.receiver.wait_for(ids, stall_seconds=options.stall_seconds)
        # After the last arrival, so a backlog the worker clears after the load is counted too.
        drained = Snapshot.take(group, ctx.receiver_group, web)
    first = dump.first_arrivals(ids)
    return Latency(
        config=config,
        rate=options.rate,
        achieved_rate=load.rate,
        seconds=options.seconds,
        accepted=len(ids),
        arrived=len(first),
        duplicates=dump.duplicates(ids),
        errors=load.errors,
        to_arrival_ms=[(first[job.job_id] - job.accepted_at) * 1000 for job in load.accepted if job.job_id in first],
        accept_ms=[(job.accepted_at - job.sent_at) * 1000 for job in load.accepted],
        signatures=check_signatures(dump, [seeded.secret for seeded in ctx.accounts]),
        unsigned=dump.unsigned,
        db_completed=db_completed(ids),
        busy=loaded.busy_since(start),
        busy_before=busy_before,
        cpu_seconds=drained.cpu_since(start),
    )


# --- The IP filter's cost ----------------------------------------------------------------------


def ip_filter_cost(repeat: int = 2000) -> tuple[float, float]:
    """Microseconds per call of the check production runs before every delivery (the bench turns it off).

    A name from /etc/hosts ("localhost") goes through getaddrinfo's files source, as a public name listed
    there would; a public IP literal runs the address checks without any lookup. A real DNS name adds the
    resolver's round trip, which no local measurement shows.
    """
    from requests_hardened.ip_filter import get_ip_address

    def per_call(host: str, allow_loopback: bool) -> float:
        started = time.perf_counter()
        for _ in range(repeat):
            get_ip_address(host, 443, allow_loopback=allow_loopback)
        return (time.perf_counter() - started) / repeat * 1e6

    return per_call("localhost", True), per_call("93.184.215.14", False)


# --- Main ------------------------------------------------------------------------------------


def print_header(options: Options) -> None:
    configs = ", ".join(config.label for config in options.configs)
    print(
        f"NotifyHub webhook delivery: {options.jobs} jobs per run, worker configurations: {configs}\n"
        f"  worker: celery --app notifyhub worker --loglevel {options.loglevel} --pool P --concurrency N "
        f"(the Procfile's line), 'K * ...' = K such processes; floor: the same on bench/delivery_floor.py\n"
        f"  receiver: bench/delivery_receiver.py (asyncio, TLS, keep-alive), one process; {os.cpu_count()} CPUs\n"
        "  wkr ms / pg ms / rcv ms: CPU milliseconds per delivery of the worker's process group / of PostgreSQL\n"
        "  (all its processes, so other clients count too) / of the receiver;\n"
        "  busy: machine CPU share over the run; before: the same in the idle second before it;\n"
        "  sig: sampled deliveries with the right body and a valid signature; db ok: jobs completed in the database;\n"
        "  db con: PostgreSQL connections opened during the run; #: the round (app, then floor, each round)\n",
        flush=True,
    )


@contextlib.contextmanager
def receiver_process(ctx_env: dict[str, str], options: Options, tls: TlsFiles) -> Iterator[Group]:
    require_free_port(options.receiver_port, "receiver")
    command = [
        sys.executable,
        "-m",
        "bench.delivery_receiver",
        "--port",
        str(options.receiver_port),
        "--cert",
        str(tls.cert),
        "--key",
        str(tls.key),
    ]
    with running("receiver", command, cwd=ROOT, env=ctx_env, log_path=VAR_DIR / "receiver.log") as group:
        wait_until_listening(group.process, options.receiver_port, "receiver", group.log_path)
        yield group


def prepare(options: Options) -> tuple[dict[str, str], TlsFiles, str]:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    tls = make_tls_files(VAR_DIR / "tls")
    floor_secret = "whsec_" + uuid.uuid4().hex * 2
    env = bench_environment(options, tls, floor_secret)
    reset_database(options.database_url)
    flush_redis(options.redis_url)
    migrate(env)
    os.environ.update(env)
    import django

    django.setup()
    return env, tls, floor_secret


def run(options: Options) -> None:
    print_header(options)
    env, tls, floor_secret = prepare(options)
    rows: list[Throughput] = []
    latency_result = None
    try:
        with receiver_process(env, options, tls) as receiver_group:
            receiver = ReceiverClient(options.receiver_port, str(tls.ca))
            ctx = Context(options, env, tls, floor_secret, receiver, receiver_group)
            ctx.log(f"seeding {options.account_count} Startup accounts")
            ctx.accounts = seed_accounts(options.account_count)
            for config in options.configs if options.throughput else ():
                for number in range(1, options.rounds + 1):
                    rows.append(throughput(ctx, "app", config, round_number=number))
                    if options.floor:
                        rows.append(throughput(ctx, "floor", config, round_number=number))
            if options.latency:
                latency_result = latency(ctx, options.configs[0])
            receiver.close()
    finally:
        flush_redis(options.redis_url)  # no queued task outlives the run
    if rows:
        print_throughput(rows)
        print_notes(rows)
    lookup_us, checks_us = ip_filter_cost()
    print(
        f"IP filter (off here, on in production): {lookup_us:.0f} us per delivery for a name in /etc/hosts, "
        f"{checks_us:.0f} us for a public IP literal; DNS names add a resolver round trip\n"
    )
    if latency_result is not None:
        print_latency(latency_result)


def main() -> int:
    options = parse_options(sys.argv[1:])
    return bench_main(lambda: run(options))


if __name__ == "__main__":
    sys.exit(main())
