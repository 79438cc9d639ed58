"""What the benchmarks share: their own database and Redis DB, process groups, CPU accounting, seeding, requests to
the servers they start, verdicts.

Every server and worker runs in a session of its own, so Ctrl-C reaches only the bench, whose ``finally`` blocks stop
each process group (SIGTERM, then SIGKILL): nothing outlives a run, even an interrupted one.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import re
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlsplit

import certifi
import psycopg
import redis
import trustme
from cryptography.fernet import Fernet
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

ROOT = Path(__file__).resolve().parent.parent
VAR_DIR = ROOT / "var" / "bench"
BIN = Path(sys.executable).parent
TICKS = os.sysconf("SC_CLK_TCK")
# Below this share of the CPUs busy while the bench's own processes idle, the machine counts as quiet.
QUIET_BUSY = 0.10


class BenchError(Exception):
    """The benchmark itself could not run (as opposed to a result that misses its target)."""


def option(
    parser: argparse.ArgumentParser, name: str, default: Any, help: str = "", *, env: str = "", **kw: Any
) -> None:
    """``--name``, defaulting to the environment variable BENCH_<ENV>_<NAME> (upper case), then to ``default``."""
    variable = "_".join(["BENCH", *filter(None, [env]), name]).replace("-", "_").upper()
    kw.setdefault("type", type(default))  # argparse converts a string default with it, as it would the option
    default_text = os.environ.get(variable, "").strip() or str(default)
    text = f"{help} ({variable}, default {default})".lstrip().replace("%", "%%")  # argparse formats help with %
    parser.add_argument(f"--{name}", default=default_text, help=text, **kw)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- A database and a Redis DB of the bench's own --------------------------------------------------


def fresh_services(database_url: str, redis_url: str) -> None:
    """Drops, recreates and migrates the bench's database and flushes its Redis DB; Django runs in this process."""
    name = str(conninfo_to_dict(database_url).get("dbname", ""))
    if "bench" not in name:
        raise BenchError(f"refusing to recreate database {name!r}: its name must contain 'bench'")
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    os.environ.update(DATABASE_URL=database_url, REDIS_URL=redis_url, NOTIFYHUB_VAR_DIR=str(VAR_DIR), DEBUG="false")
    # With REDIS_URL set the app is a deployment, which must be given its secrets and public URL (README.md,
    # Production). A run's own: the database they encrypt into is made anew with it, and its processes inherit them.
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ.setdefault("FIELD_ENCRYPTION_KEY", Fernet.generate_key().decode())
    os.environ.setdefault("PUBLIC_URL", "https://bench.example")
    os.environ.update(DJANGO_SETTINGS_MODULE="notifyhub.settings", GUNICORN_ACCESS_LOG="off")
    import django
    from django.core.management import call_command
    from django.db import connections

    django.setup()  # settings are read once: every subcommand of a run uses the same URLs
    connections.close_all()
    try:
        with psycopg.connect(database_url, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as error:
        raise BenchError(f"cannot reach PostgreSQL at {database_url}: {error}") from error
    flush_redis(redis_url)
    call_command("migrate", verbosity=0, interactive=False)


def flush_redis(redis_url: str) -> None:
    # Flushed at start and end: never DB 0, where everything else lives by default.
    if urlsplit(redis_url).path.strip("/") in ("", "0"):
        raise BenchError(f"refusing to flush {redis_url}: give the bench a Redis DB of its own, e.g. /14")
    try:
        redis.Redis.from_url(redis_url).flushdb()
    except redis.RedisError as error:
        raise BenchError(f"cannot reach Redis at {redis_url}: {error}") from error


@contextlib.contextmanager
def own_services(args: argparse.Namespace) -> Iterator[None]:
    """A run on the bench's own database, made anew, and Redis DB, flushed at the start and again at the end however
    the run ends: no queued task (no worker is left to take it) or rate-limit count outlives it."""
    fresh_services(args.database_url, args.redis_url)
    try:
        yield
    finally:
        flush_redis(args.redis_url)


@dataclass(frozen=True)
class Seeded:
    account: Any  # accounts.models.Account; Django is imported only once it is set up
    api_key: str
    secret: str | None


def seed_accounts(
    count: int,
    *,
    prefix: str,
    plan: str = "startup",
    secrets: bool = False,
    monthly_limit: int | None = None,
    rate_limit: int | None = None,
) -> list[Seeded]:
    """Accounts on ``plan`` (Startup), each with an API key, its current usage row (the steady state of an account
    that has sent before), with ``secrets`` a signing secret so every delivery is signed, and with ``monthly_limit``
    and ``rate_limit`` a quota and a rate of its own in place of the plan's (``Account.monthly_limit`` and
    ``rate_limit``, as staff set them)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.billing import billing_period
    from accounts.models import UsagePeriod
    from accounts.services import (
        account_create,
        account_set_monthly_limit,
        account_set_rate_limit,
        signing_secret_generate,
    )

    seeded = []
    with transaction.atomic():
        for number in range(count):
            account, api_key = account_create(email=f"{prefix}{number}@bench.example", plan=plan)
            if monthly_limit is not None:
                account_set_monthly_limit(account=account, limit=monthly_limit)
            if rate_limit is not None:
                account_set_rate_limit(account=account, rate=rate_limit)
            start, _ = billing_period(anchor=account.plan_started_on, today=timezone.now().date())
            UsagePeriod.objects.create(account=account, period_start=start)
            secret = signing_secret_generate(account=account) if secrets else None
            seeded.append(Seeded(account, api_key, secret))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh tables have no statistics; give the planner real ones
    return seeded


def sends_through_sendgrid(account: Any, api_key: str) -> None:
    """Gives ``account`` a SendGrid key and a verified sending domain, example.com, registered there: its email goes
    out through SendGrid (the fake of tests/fakes/ the bench points SENDGRID_API_URL at), from that domain."""
    from django.utils import timezone

    from accounts.services import provider_key_set
    from domains.models import DomainRegistration, DomainStatus, SenderDomain

    provider_key_set(account=account, provider="SENDGRID", api_key=api_key)
    domain = SenderDomain.objects.create(
        account=account, name="example.com", status=DomainStatus.VERIFIED, verified_at=timezone.now()
    )
    DomainRegistration.objects.create(domain=domain, provider="SENDGRID", provider_domain_id="1", verified=True)


def column(model: Any, name: str) -> str:
    """The quoted column of a model's field, for the seeding statements written out in SQL."""
    from core.sql import quote

    return quote(model._meta.get_field(name).column)


def run_sql(statement: str, params: dict[str, Any] | None = None) -> int:
    """Runs one statement in autocommit (VACUUM needs it); returns the rows it touched."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return int(cursor.rowcount)


@contextlib.contextmanager
def timed(step: str, seconds: dict[str, float]) -> Iterator[None]:
    """Records the wall time of the ``with`` body as ``seconds[step]``."""
    started = time.monotonic()
    yield
    seconds[step] = time.monotonic() - started


# --- Requests to the servers the bench starts ------------------------------------------------------

ACCEPT_PATH = "/api/v1/notifications/webhook"
# X-Forwarded-Proto: what the TLS proxy in front of production adds; without it the app redirects to HTTPS.
PROXY_HEADERS = {"X-Forwarded-Proto": "https"}
API_HEADERS = {"Content-Type": "application/json", **PROXY_HEADERS}
# A Startup key may make 200 requests a minute (docs/rules.md, "Limits"): plan for 150 a key at most, none limited.
REQUESTS_PER_KEY = 150
# With --against, a change may not make a path slower than 95% of the revision it replaces.
MIN_SHARE_OF_BEFORE = 0.95


@dataclass(frozen=True)
class Exchange:
    """One request's answer: status, headers, body, and the seconds from connecting to the body read."""

    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)


def one_request(port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> Exchange:
    """One request on a new connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.monotonic()
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()
    except (OSError, http.client.HTTPException) as error:
        raise BenchError(f"{method} {path} failed: {error}") from error
    finally:
        connection.close()
    return Exchange(response.status, dict(response.getheaders()), answer, time.monotonic() - started)


def open_loop(
    port: int, rate: float, total: int, senders: int, send: Callable[[http.client.HTTPConnection, int, float], str]
) -> tuple[float, Counter[str]]:
    """``total`` requests at ``rate`` a second, open loop: request i is due at start + i / rate whatever happened before
    it, shared by ``senders`` threads, each on its own keep-alive connection. ``send(connection, i, due)`` makes
    request i and returns what went wrong with the answer ("" if nothing). A request that fails is not retried (a
    retry could store it twice); a fresh connection serves the next. Returns the start (``time.monotonic()``) and the
    count of each error."""
    errors: Counter[str] = Counter()
    lock, start = threading.Lock(), time.monotonic() + 0.1

    def sender(first: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for number in range(first, total, senders):
            due = start + number / rate
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                error = send(connection, number, due)
            except (OSError, http.client.HTTPException) as failure:
                error = type(failure).__name__
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            if error:
                with lock:
                    errors[error] += 1
        connection.close()

    threads = [threading.Thread(target=sender, args=(first,), daemon=True) for first in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return start, errors


# --- Processes -------------------------------------------------------------------------------------


def port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


@dataclass(frozen=True)
class Proc:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise BenchError(f"{self.name} exited with status {self.process.returncode}; see {self.log_path}")

    def cpu(self) -> float:
        """CPU seconds of every live process in the group (a Celery or gunicorn master and its children)."""
        return cpu_seconds(lambda _name, fields: int(fields[2]) == self.process.pid)


def _stop_group(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # Children of a master that exited first (prefork, gunicorn workers) may still be in the group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def running(
    name: str, command: list[str], *, env: dict[str, str] | None = None, port: int = 0, cwd: Path = ROOT
) -> Iterator[Proc]:
    """Runs ``command`` in a session of its own, output to var/bench/<name>.log, and waits for ``port`` if given;
    stops the whole process group on exit."""
    if port and port_open(port):
        raise BenchError(f"port {port} for {name} is already in use; pick another (see --help)")
    log_path = VAR_DIR / f"{name}.log"
    with log_path.open("ab") as log_file:
        log_file.write(f"\n=== {time.strftime('%H:%M:%S')} {' '.join(command)}\n".encode())
        log_file.flush()
        env = {**os.environ, **(env or {})}
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        proc = Proc(name, process, log_path)
        try:
            deadline = time.monotonic() + 60
            while port and not port_open(port):
                proc.check_alive()
                if time.monotonic() > deadline:
                    raise BenchError(f"{name} did not listen on port {port} within 60 s; see {log_path}")
                time.sleep(0.1)
            yield proc
        finally:
            _stop_group(process)


def gunicorn(
    name: str, port: int, settings: str | None = None, *, tree: Path = ROOT, **env: str
) -> contextlib.AbstractContextManager[Proc]:
    """The web process as production starts it: ``gunicorn notifyhub.wsgi --config gunicorn.conf.py``.

    ``tree``: the checkout whose code it serves (another revision's worktree, to compare before and after).
    """
    env.update(DJANGO_SETTINGS_MODULE=settings or "notifyhub.settings", GUNICORN_BIND=f"127.0.0.1:{port}")
    command = [str(BIN / "gunicorn"), "notifyhub.wsgi", "--config", "gunicorn.conf.py"]
    return running(name, command, env=env, port=port, cwd=tree)


@contextlib.contextmanager
def celery_beat(name: str, *, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Iterator[Proc]:
    """The Procfile's beat line, ``celery --app notifyhub beat`` (at WARNING: a line per task sent would be most of
    its log), with the workers' environment. Its schedule file lives in a directory of its own, removed on exit: a run
    starts from no remembered schedule and never shares the file with another beat (settings put it in var/bench/)."""
    with tempfile.TemporaryDirectory(prefix="bench-beat-") as directory:
        command = [str(BIN / "celery"), "--app", "notifyhub", "beat", "--loglevel", "WARNING"]
        command += ["--schedule", str(Path(directory) / "celerybeat-schedule")]
        with running(name, command, env=env, cwd=cwd) as proc:
            yield proc


def revision_tree(revision: str) -> Path:
    """A worktree of ``revision`` under var/bench/, made once: the code a comparison runs against."""
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"], cwd=ROOT, capture_output=True, text=True
    )
    if sha.returncode != 0:
        raise BenchError(f"not a revision: {revision}")
    tree = VAR_DIR / f"tree-{sha.stdout.strip()[:12]}"
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha.stdout.strip()], cwd=ROOT, check=True)
    return tree


# --- CPU accounting from /proc (Linux) ---------------------------------------------------------------


def cpu_seconds(match: Callable[[str, list[str]], bool], *, reaped: bool = False) -> float:
    """Summed CPU time of the live processes whose command name and /proc stat fields (after the name) match;
    with ``reaped``, that of their exited children too (PostgreSQL's postmaster reaps the backends)."""
    total = 0
    for stat_path in Path("/proc").glob("[0-9]*/stat"):
        try:
            stat = stat_path.read_text()
        except OSError:
            continue  # the process ended while we looked
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if match(name, fields):
            total += sum(int(value) for value in fields[11 : 15 if reaped else 13])
    return total / TICKS


def command_cpu(*prefixes: str) -> float:
    """CPU seconds of the processes named ``prefixes`` (e.g. postgres: every backend, other clients' included)."""
    return cpu_seconds(lambda name, _fields: name.startswith(prefixes), reaped=True)


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended (wrk runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Sample:
    """The machine's CPU ticks and named processes' CPU seconds at one moment."""

    at: float
    total: int
    idle: int
    cpu: dict[str, float]

    @classmethod
    def take(cls, **sources: Callable[[], float]) -> Sample:
        ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return cls(time.monotonic(), sum(ticks), ticks[3] + ticks[4], {name: get() for name, get in sources.items()})

    def busy_since(self, earlier: Sample) -> float:
        """Share of all CPUs busy between the two samples."""
        return 1 - (self.idle - earlier.idle) / max(self.total - earlier.total, 1)

    def cpu_since(self, earlier: Sample) -> dict[str, float]:
        return {name: seconds - earlier.cpu[name] for name, seconds in self.cpu.items()}

    def share_since(self, earlier: Sample, seconds: float) -> float:
        """``seconds`` of CPU as a share of all CPUs between the two samples."""
        return seconds * TICKS / max(self.total - earlier.total, 1)


def wait_for_quiet(max_wait: float) -> float:
    """Waits (up to ``max_wait`` s) until other work keeps less than QUIET_BUSY of the CPUs busy while the bench's
    processes idle; returns the last idle second's busy share. Starting while another run holds the cores measures
    that run, not ours."""
    deadline = time.monotonic() + max_wait
    while True:
        before = Sample.take()
        time.sleep(1)
        busy = Sample.take().busy_since(before)
        if busy <= QUIET_BUSY or time.monotonic() > deadline:
            return busy
        log(f"other work keeps {busy:.0%} of the CPUs busy; waiting for it")


@contextlib.contextmanager
def pgbouncer(database_url: str) -> Iterator[dict[str, str]]:
    """PgBouncer in transaction pooling in front of the bench's database, as the pooled fault tests run it; started
    once the database exists, removed however the run ends. Yields what a process's environment needs to go
    through it."""
    # Imports the tests' conftest, so Django's models: only once own_services has set Django up.
    from tests.faults.services import POSTGRES_USER, PgBouncer, pgbouncer_binary

    binary = pgbouncer_binary()
    if binary is None:
        raise BenchError("PgBouncer is not installed; on Debian/Ubuntu: apt-get install pgbouncer")
    server = conninfo_to_dict(database_url)
    if server.get("host") not in ("127.0.0.1", "localhost") or server.get("user", POSTGRES_USER) != POSTGRES_USER:
        # The fault tests' PgBouncer speaks to 127.0.0.1 as the postgres user, trusted, with no password.
        raise BenchError(
            f"the bench puts PgBouncer in front of 127.0.0.1 as {POSTGRES_USER}; --database-url is not that"
        )
    pooler = PgBouncer(
        binary, server_port=int(server.get("port") or 5432), log_dir=VAR_DIR, database=str(server["dbname"])
    )
    try:
        try:
            pooler.start()
        except RuntimeError as error:
            raise BenchError(str(error)) from error
        log(f"PgBouncer on port {pooler.port} (its log: {VAR_DIR / 'pgbouncer.log'} once it stops)")
        yield {"DATABASE_URL": pooler.url, "DATABASE_POOLER": "pgbouncer"}
    finally:
        pooler.remove()


# --- TLS for the webhook receivers ---------------------------------------------------------------------

TLS_DIR = VAR_DIR / "tls"


def make_tls() -> trustme.CA:
    """A throw-away CA and a certificate for 127.0.0.1 signed by it, in TLS_DIR: ca.pem (the CA alone, for
    WEBHOOK_CA_BUNDLE), ca-bundle.pem (certifi's CAs plus it, as the app combines them), cert.pem and key.pem."""
    TLS_DIR.mkdir(parents=True, exist_ok=True)
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1", "localhost")
    authority.cert_pem.write_to_path(str(TLS_DIR / "ca.pem"))
    (TLS_DIR / "ca-bundle.pem").write_text(
        Path(certifi.where()).read_text() + "\n" + authority.cert_pem.bytes().decode()
    )
    (TLS_DIR / "cert.pem").write_bytes(b"".join(pem.bytes() for pem in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(TLS_DIR / "key.pem"))
    return authority


# --- Results ---------------------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else math.nan


def table(columns: str, rows: Iterable[Sequence[Any]]) -> None:
    """Prints ``rows`` under a header; ``columns`` is "title<width|title>width.2f|...", the format for numbers."""
    specs = [re.split(r"(?=[<>]\d)", column, maxsplit=1) for column in columns.split("|")]
    widths = [re.match(r"[<>]\d+", spec).group() for _, spec in specs]  # type: ignore[union-attr]
    print("".join(f"{title:{width}}" for (title, _), width in zip(specs, widths, strict=True)))
    for row in rows:
        cells = [
            f"{value:{spec if isinstance(value, int | float) else width}}"
            for (_, spec), width, value in zip(specs, widths, row, strict=True)
        ]
        print("".join(cells))


def verdict(label: str, value: str, target: str, ok: bool) -> None:
    print(f"{label:<32}{value:>12}   target {target:<10}{'PASS' if ok else 'FAIL'}")


def judge_rounds(label: str, pairs: list[tuple[float, float]], minimum: float) -> None:
    """The median over rounds of app/floor, each app run against the floor run right after it: the machine's speed
    drifts more over minutes than the gap being judged, and a slow spell spanning both runs of a round cancels."""
    ratios = [app / floor if floor else 0.0 for app, floor in pairs]
    share = median(ratios)
    verdict(label, f"{share:.1%}", f">= {minimum:.0%}", share >= minimum)
    if len(ratios) > 1:
        print(f"  per round: {', '.join(f'{ratio:.1%}' for ratio in ratios)} (the verdict takes the median)")


def bench_main(run: Callable[[], None]) -> int:
    """Runs a benchmark; its exit status says whether it could run (1 if not), not whether targets were met."""

    def raise_on_sigterm(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # so the finally blocks stop every process group and clean Redis

    signal.signal(signal.SIGTERM, raise_on_sigterm)
    try:
        run()
    except BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    return 0
