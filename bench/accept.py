"""accept: ``POST /api/v1/notifications/webhook`` under gunicorn, the app against its floor, loaded with wrk.

Two servers one after the other, as production starts the web process: the app, and the floor (``floor_accept.py``:
the same job insert and quota take in raw SQL, nothing around them), or with ``--against`` another revision's app.
With ``--send email`` the load is plain emails (``POST /api/v1/notifications/email``), judged against a revision
only. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from bench.common import (
    ACCEPT_PATH,
    API_HEADERS,
    MIN_SHARE_OF_BEFORE,
    REQUESTS_PER_KEY,
    ROOT,
    VAR_DIR,
    BenchError,
    Sample,
    children_cpu,
    command_cpu,
    gunicorn,
    judge_rounds,
    log,
    option,
    own_services,
    revision_tree,
    seed_accounts,
    table,
    verdict,
    wait_for_quiet,
)

HELP = "the accept path against its floor"
# The floor does the same essential work, so the app may cost little more than it (docs/departures.md weighs what
# the framework's road costs on top).
MIN_ACCEPT_SHARE = 0.90
MAX_P99_OF_FLOOR = 1.3
MAX_ACCEPT_P99_MS = 50.0
MAX_RPS = 3000  # the fastest app the API keys are planned for
EMAIL_PATH = "/api/v1/notifications/email"
KEYS_FILE = VAR_DIR / "api-keys.txt"
# The processes beside gunicorn that a request makes work, by command name: their CPU is the bench's, not other load.
HELPERS = ("postgres", "redis-server", "pgbouncer")
ACCEPT_COLUMNS = (
    "round<7|target<8|req/s>10.1f|p50 ms>9.1f|p99 ms>9.1f|errors>8|requests>10|jobs stored>13|cpu ms/req>12.2f"
    "|other load>12.0%"
)


@dataclass(frozen=True)
class Load:
    """What wrk sends (accept.lua): one send's body a request (a webhook's, or with ``send`` "email" a plain
    email's, or with ``fields_file`` the JSON object in that file), or with ``items`` a batch of that many sends, to
    ``path``, with the API keys in ``keys_file`` (written by ``seed_keys``)."""

    path: str = ACCEPT_PATH
    items: int = 0
    keys_file: Path = KEYS_FILE
    send: str = "webhook"
    # One send's fields but its idempotency key, a JSON object on one line, in place of ``send``'s.
    fields_file: Path | None = None

    @property
    def sends(self) -> int:
        """Sends a request carries."""
        return max(self.items, 1)

    def body(self, tag: str) -> dict[str, Any]:
        """One request's body, as accept.lua writes it (the first request of a run)."""
        sends = [self.one_send(f"{tag}-{item}") for item in range(self.sends)]
        return {"items": sends} if self.items else sends[0]

    def one_send(self, idempotency_key: str) -> dict[str, Any]:
        if self.fields_file is not None:
            return {**json.loads(self.fields_file.read_text()), "idempotencyKey": idempotency_key}
        if self.send == "email":
            return {"to": "reader@bench.example", "subject": "Bench", "body": "ping", "idempotencyKey": idempotency_key}
        return {"url": "https://hooks.example.com/in", "payload": {}, "idempotencyKey": idempotency_key}


SINGLE = Load()
EMAIL = Load(path=EMAIL_PATH, send="email")


@dataclass(frozen=True)
class AcceptRun:
    target: str
    rps: float
    p50_ms: float
    p99_ms: float
    mean_ms: float
    non_202: int
    socket_errors: int
    requests: int
    jobs: int  # jobs the 202 answers accepted: one each for single sends, a batch's "jobId"s
    refused: int  # items of batches answered 202 that refused them in their slots
    jobs_stored: int
    cpu_ms: float  # gunicorn's CPU per request: what a request costs the web tier, steadier than req/s
    other_load: float  # share of all CPUs used by processes that are not the bench's
    helper_ms: dict[str, float]  # CPU per request of PostgreSQL (every backend), Redis and PgBouncer (if one runs)

    @property
    def errors(self) -> int:
        return self.non_202 + self.socket_errors + self.refused


def run_wrk(
    args: argparse.Namespace, target: str, *, seconds: int, first_key: int, load: Load = SINGLE
) -> dict[str, int]:
    # Idempotency keys are unique per account and both servers share the accounts: each load tags its own.
    tag = f"{target}-{uuid.uuid4().hex[:12]}"
    command = ["wrk", "-t", str(args.wrk_threads), "-c", str(args.connections), "-d", f"{seconds}s", "--timeout", "5s"]
    command += ["-s", str(Path(__file__).with_name("accept.lua")), f"http://127.0.0.1:{args.port}{load.path}"]
    command += ["--", str(load.keys_file), tag, str(args.wrk_threads), str(first_key), str(load.items), load.send]
    command += [str(load.fields_file)] if load.fields_file else []
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + 60)
    except subprocess.TimeoutExpired as error:
        raise BenchError(f"wrk did not finish on {target} within {seconds + 60} s") from error
    line = next((line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise BenchError(f"wrk failed on {target} (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return {name: int(value) for name, value in (item.split("=", 1) for item in line.split()[1:])}


def accept_run(
    args: argparse.Namespace,
    target: str,
    *,
    first_key: int,
    env: dict[str, str] | None = None,
    load: Load = SINGLE,
) -> AcceptRun:
    """One server's run; ``env``: what gunicorn gets on top of the bench's environment (``scale``: PgBouncer's URL);
    ``load``: what wrk sends (``batches``: batches of sends)."""
    from notifications.models import Job

    log(f"accept: {target} on port {args.port}")
    settings = "bench.floor_accept" if target == "floor" else None
    tree = revision_tree(args.against) if target == "before" else ROOT
    env = {**request_log_env(args, target), **(env or {})}
    with gunicorn(f"gunicorn-{target}", args.port, settings, tree=tree, **env) as server:
        # One request first, so a broken server fails loudly instead of producing a fast row of errors.
        connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
        body = load.body(uuid.uuid4().hex)
        keys = load.keys_file.read_text().split()
        headers = {**API_HEADERS, "X-API-Key": keys[first_key % len(keys)]}
        try:
            connection.request("POST", load.path, body=json.dumps(body), headers=headers)
            response = connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise BenchError(f"{target}: first request failed: {error}; see {server.log_path}") from error
        finally:
            connection.close()
        # A batch answers 202 whatever its items' fate: each must have been accepted, a job in its slot.
        if response.status != 202 or (load.items and answer.count(b'"jobId"') != load.items):
            raise BenchError(f"{target} answered {response.status}: {answer[:300]!r}; see {server.log_path}")
        wait_for_quiet(args.quiet_wait)
        # Warm-up: every worker imports lazily and opens its database and broker connections.
        run_wrk(args, target, seconds=args.warmup, first_key=first_key, load=load)
        time.sleep(1)  # lets the warm-up's last requests land before the jobs are counted
        jobs_before = Job.objects.count()
        sources = {
            "server": server.cpu,
            **{name: lambda name=name: command_cpu(name) for name in HELPERS},
            "wrk": children_cpu,
        }
        before = Sample.take(**sources)
        stats = run_wrk(args, target, seconds=args.duration, first_key=first_key, load=load)
        after = Sample.take(**sources)
    cpu = after.cpu_since(before)
    return AcceptRun(
        target,
        rps=stats["requests"] / stats["duration_us"] * 1e6,
        p50_ms=stats["p50_us"] / 1000,
        p99_ms=stats["p99_us"] / 1000,
        mean_ms=stats["mean_us"] / 1000,
        non_202=stats["unexpected"],
        socket_errors=stats["connect"] + stats["read"] + stats["write"] + stats["timeout"],
        requests=stats["requests"],
        jobs=stats["jobs"],
        refused=(stats["requests"] - stats["unexpected"]) * load.sends - stats["jobs"],
        jobs_stored=Job.objects.count() - jobs_before,  # once gunicorn stopped: requests in flight have landed
        cpu_ms=cpu["server"] * 1000 / max(stats["requests"], 1),
        other_load=max(0.0, after.busy_since(before) - after.share_since(before, sum(cpu.values()))),
        helper_ms={name: cpu[name] * 1000 / max(stats["requests"], 1) for name in HELPERS},
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


def errors_verdict(runs: list[AcceptRun]) -> None:
    errors = sum(run.errors for run in runs)
    verdict("errors", str(errors), "0", errors == 0)


def run_notes(runs: list[AcceptRun]) -> None:
    """What went wrong in a run, and runs that other work disturbed."""
    for run in runs:
        if run.errors:
            refused = f", {run.refused} items refused in batches answered 202" if run.refused else ""
            print(
                f"  {run.target}: {run.non_202} answers not 202, {run.socket_errors} socket errors or timeouts{refused}"
            )
        if run.other_load > 0.10:
            print(f"  note: other processes used {run.other_load:.0%} of the CPUs in a {run.target} run; re-run")


def seed_keys(
    args: argparse.Namespace,
    rounds: int,
    *,
    keys_file: Path = KEYS_FILE,
    prefix: str = "accept",
    plan: str = "startup",
    monthly_limit: int | None = None,
    rate_limit: int | None = None,
    requests_per_key: int = REQUESTS_PER_KEY,
) -> int:
    """Seeds accounts on ``plan`` (Startup) for ``rounds`` rounds and writes their API keys to ``keys_file``, where
    accept.lua reads them; returns the keys a round takes. Each round starts on keys of its own, so no key sees two
    rounds' requests within one minute. ``monthly_limit``, ``rate_limit``: each account's own quota and rate in place
    of the plan's (batches spend more; a Free key's would refuse the email load); ``requests_per_key``: the most
    requests a key may make in a round, which ``rate_limit`` must allow within a minute."""
    keys_per_round = max(args.connections, math.ceil(MAX_RPS * (args.warmup + args.duration) / requests_per_key))
    seeded = seed_accounts(
        keys_per_round * rounds, prefix=prefix, plan=plan, monthly_limit=monthly_limit, rate_limit=rate_limit
    )
    keys_file.write_text("".join(f"{account.api_key}\n" for account in seeded))
    return keys_per_round


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "duration", 20, "measured seconds per server", env="accept")
    option(parser, "warmup", 3, "warm-up seconds per server", env="accept")
    option(parser, "rounds", 3, "app then floor, this many times; the verdicts take the medians", env="accept")
    option(parser, "connections", 16, "wrk connections", env="accept")
    option(parser, "wrk-threads", 2, "wrk threads (wrk shares the CPUs with the servers)", env="accept")
    option(parser, "port", 8771, "gunicorn's port", env="accept")
    option(parser, "against", "", "a git revision run in the floor's place: before against after", env="accept")
    option(
        parser,
        "send",
        "webhook",
        "what a request sends: a webhook, or a plain email (with --against only: the floor is a webhook's)",
        env="accept",
        choices=["webhook", "email"],
    )
    option(
        parser,
        "request-log",
        "off",
        "off: no line per request on either side; on: each side's own default (with --against)",
        env="accept",
        choices=["off", "on"],
    )


def seed_load(args: argparse.Namespace) -> tuple[int, Load]:
    """The keys for ``--send``'s load (``seed_keys``: the keys a round takes) and the load."""
    if args.send == "webhook":
        return seed_keys(args, args.rounds), SINGLE
    return seed_email_keys(args, args.rounds), EMAIL


def seed_email_keys(
    args: argparse.Namespace,
    rounds: int,
    *,
    keys_file: Path = KEYS_FILE,
    prefix: str = "accept",
    requests_per_key: int | None = None,
) -> int:
    """``seed_keys`` for email sends: Free accounts, whose email goes out through the platform's sender with no
    provider key or sending domain (docs/rules.md, "Senders"). Each has the Startup plan's rate and quota as its own,
    in place of Free's 5 a minute and 100 a month, so the keys are planned as the webhook load's and none is limited;
    Free counts every email. With ``requests_per_key``, each has a rate and a quota that let it make that many in a
    round, as an account that sends a lot is given: a round then takes as few keys as it can."""
    from accounts.plans import Plan, limits_for

    startup = limits_for(Plan.STARTUP)
    rate, quota, per_key = (
        (startup.requests_per_minute, startup.monthly_quota, REQUESTS_PER_KEY)
        if requests_per_key is None
        else (requests_per_key, requests_per_key, requests_per_key)
    )
    return seed_keys(
        args,
        rounds,
        keys_file=keys_file,
        prefix=prefix,
        plan=Plan.FREE,
        monthly_limit=quota,
        rate_limit=rate,
        requests_per_key=per_key,
    )


def run(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: apt-get install wrk")
    if args.send == "email" and not args.against:
        raise BenchError("--send email needs --against <revision>: the floor (floor_accept.py) does a webhook's work")
    log(
        f"accept: {args.send} sends, wrk -t{args.wrk_threads} -c{args.connections}, {args.duration} s a run, "
        f"rounds: {args.rounds}"
    )
    with own_services(args):
        keys_per_round, load = seed_load(args)
        # Against a revision, its code takes the floor's place: the same load, alternating, round by round.
        targets = ("app", "before") if args.against else ("app", "floor")
        rounds = [
            [accept_run(args, target, first_key=number * keys_per_round, load=load) for target in targets]
            for number in range(args.rounds)
        ]
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
    if not args.against:
        of_floor = p99 / max(median(floor.p99_ms for floor in floors), 1e-9)
        verdict("app p99 / floor p99", f"{of_floor:.2f}x", f"<= {MAX_P99_OF_FLOOR}x", of_floor <= MAX_P99_OF_FLOOR)
    errors_verdict(apps + floors)
    cost = median(app.cpu_ms for app in apps) / max(median(floor.cpu_ms for floor in floors), 1e-9)
    print(f"  gunicorn CPU per request: app {cost:.2f}x the {floors[0].target}'s (not a target; explains the ratio)")
    run_notes(apps + floors)
    if max(app.rps for app in apps) > MAX_RPS:
        print(f"  note: the app ran above {MAX_RPS} req/s; some keys may have met the rate limit")
