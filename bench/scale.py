"""scale: delivery with 1, 2 and 3 worker processes, directly and through PgBouncer; the accept path through PgBouncer
against directly.

Delivery: the delivery bench's throughput run (``delivery.throughput``: the same receiver, jobs stored as the API
stores them, clock from the commit to the last arrival) with 1 to ``--max-processes`` worker processes side by side,
each its own node (``--hostname direct0@…``), each ``--pool threads --concurrency 8``, so N processes are N x 8
threads; against one PostgreSQL and one Redis, with DATABASE_URL the database itself, then PgBouncer in transaction
pooling (``tests/faults/services.py``'s, pool of 10 server connections; ``DATABASE_POOLER=pgbouncer``). Every
configuration runs once a round, the order reversed every other round, and each is judged as a ratio to the round's
1 worker direct: the VM's speed drifts more within minutes than the gaps being read.
Accept: gunicorn as the accept bench starts it, direct and through the same PgBouncer, alternating, wrk as there.

How to read it on this 2-core VM: a threads worker uses at most about one core (the GIL holds a process to one), and
PostgreSQL, Redis and the receiver share them too, so the ratios stop rising once both cores are full, whatever the
engine does. The ratios alone cannot tell a lock from a full machine; the CPU columns can. Processes that deliver no
more while the CPUs have room are waiting for something (a row lock, a hot row, a pool); a full machine at a flat CPU
cost a delivery is limited by its cores, and a cost that rises with the processes says they contend.

What a many-core run (8 cores or more, PostgreSQL apart) would add: whether the rate keeps rising with the processes
once cores are not the limit, and if not, which shared thing is: the claim and the record touch only the job's own
row; the record's DailyTally upsert takes the row of the job's account and day, hot when one account sends most of
the load (here jobs go round-robin over 40 or more accounts, so it is not); the broker is one single-threaded Redis
(every task's message, ack and priority queue); PgBouncer is one thread with 10 server connections for every
worker's threads; PostgreSQL writes every commit to one WAL. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median

from bench import accept, delivery
from bench.common import (
    BenchError,
    Proc,
    command_cpu,
    log,
    make_tls,
    option,
    own_services,
    pgbouncer,
    seed_accounts,
    table,
)
from bench.delivery import Delivery, DeliveryRun

HELP = "deliveries with 1 to 3 workers and the accept path, directly and through PgBouncer"
VIAS = ("direct", "pooled")
# Above this share of the CPUs busy over a run, the machine counts as full: more processes cannot run more. Not 100%:
# a run's first and last moments, with few jobs under way, leave the cores a few percent idle.
FULL = 0.85
# Worker CPU a delivery within this factor of one process's counts as flat.
FLAT = 1.15
RUN_COLUMNS = (
    "round<6|workers<8|via<8|deliv/s>9.1f|x 1 direct>11.2f|wkr ms>8.2f|pg ms>7.2f|pgb ms>7.2f|rcv ms>7.2f"
    "|all ms>7.2f|busy>6.0%|before>7.0%|arrived>12|dup>5|sig>7"
)
SUMMARY_COLUMNS = (
    "workers<8|via<8|deliv/s>9.1f|x 1 direct>11.2f|wkr ms>8.2f|pg ms>7.2f|pgb ms>7.2f|all ms>7.2f|busy>6.0%"
)


@dataclass(frozen=True)
class Setup:
    """One delivery configuration: this many worker processes, straight to PostgreSQL or through PgBouncer."""

    processes: int
    via: str  # "direct" or "pooled", also the workers' target name: worker-pooled-0.log, node pooled0@host

    def __str__(self) -> str:
        return f"{self.processes} {'process' if self.processes == 1 else 'processes'} {self.via}"


BASELINE = Setup(1, "direct")


class CountedDelivery(Delivery):
    """The delivery bench's machinery, with PgBouncer's CPU counted beside the workers', PostgreSQL's and the
    receiver's (every process named pgbouncer: 0 in the direct runs, where it idles)."""

    def sources(self, procs: list[Proc], **more: Callable[[], float]) -> dict[str, Callable[[], float]]:
        return super().sources(procs, pgbouncer=lambda: command_cpu("pgbouncer"), **more)


# --- Delivery ------------------------------------------------------------------------------------


def configured(d: Delivery, setup: Setup, envs: dict[str, dict[str, str]]) -> Delivery:
    """``d`` for one configuration: its process count where ``delivery.workers`` reads it, and the database URL of
    its way to PostgreSQL in the workers' environment."""
    args = argparse.Namespace(**{**vars(d.args), "processes": setup.processes})
    return dataclasses.replace(d, args=args, env={**d.env, **envs[setup.via]})


def per_delivery(run: DeliveryRun, source: str) -> float:
    """CPU ms a delivery of one source; ``all``: every process on the machine (the busy share of all CPUs)."""
    if source == "all":
        return run.busy * (os.cpu_count() or 1) * run.seconds * 1000 / max(run.arrived, 1)
    return run.cpu_ms(source)


def delivery_rounds(
    d: Delivery, setups: list[Setup], envs: dict[str, dict[str, str]]
) -> list[dict[Setup, DeliveryRun]]:
    """Every configuration once a round, the order reversed every other round, so a drift across a round leans the
    ratios one way in one round and the other way in the next."""
    rounds = []
    for number in range(1, d.args.rounds + 1):
        runs: dict[Setup, DeliveryRun] = {}
        for setup in setups if number % 2 else reversed(setups):
            log(f"scale: {setup}, round {number}")
            runs[setup] = delivery.throughput(configured(d, setup, envs), setup.via, number)
        rounds.append(runs)
    return rounds


def ratios(rounds: list[dict[Setup, DeliveryRun]], setup: Setup, value: Callable[[DeliveryRun], float]) -> list[float]:
    """Each round's ``value`` of the configuration's run over that of the round's 1 process direct."""
    return [value(runs[setup]) / value(runs[BASELINE]) if value(runs[BASELINE]) else 0.0 for runs in rounds]


def rate(run: DeliveryRun) -> float:
    return run.rate


def worker_ms(run: DeliveryRun) -> float:
    return per_delivery(run, "worker")


def delivery_report(rounds: list[dict[Setup, DeliveryRun]], setups: list[Setup], threads: int) -> None:
    rows = []
    for number, runs in enumerate(rounds, start=1):
        for setup in setups:
            run, ratio = runs[setup], ratios([runs], setup, rate)[0]
            cpu = [per_delivery(run, source) for source in ("worker", "postgres", "pgbouncer", "receiver", "all")]
            counts = f"{run.arrived}/{run.jobs}", run.duplicates, "{}/{}".format(*run.signatures)
            rows.append((number, setup.processes, setup.via, run.rate, ratio, *cpu, run.busy, run.before, *counts))
    print()
    table(RUN_COLUMNS, rows)
    print(f"\nmedians over {len(rounds)} round(s); x 1 direct: the median of the rounds' ratios to their 1 direct")
    summary, readings = [], []
    for setup in setups:
        ratio, cost = median(ratios(rounds, setup, rate)), median(ratios(rounds, setup, worker_ms))
        own = [runs[setup] for runs in rounds]
        cpu = [
            median(per_delivery(run, source) for run in own) for source in ("worker", "postgres", "pgbouncer", "all")
        ]
        busy = median(run.busy for run in own)
        summary.append((setup.processes, setup.via, median(run.rate for run in own), ratio, *cpu, busy))
        readings.append(f"  {setup}: {delivery_reading(setup, ratio, busy, cost, threads)}")
    table(SUMMARY_COLUMNS, summary)
    print("\nwhat this says:")
    print("\n".join(readings))
    for processes in sorted({setup.processes for setup in setups}):
        pooled, direct = Setup(processes, "pooled"), Setup(processes, "direct")
        shares = [runs[pooled].rate / runs[direct].rate if runs[direct].rate else 0.0 for runs in rounds]
        per_round = ", ".join(f"{share:.0%}" for share in shares)
        pg = [median(per_delivery(runs[setup], "postgres") for runs in rounds) for setup in (direct, pooled)]
        print(
            f"  {pooled} against {direct}: {median(shares):.0%} of the rate (per round: {per_round}); PostgreSQL "
            f"{pg[0]:.2f} -> {pg[1]:.2f} ms a delivery (behind the pooler nothing is prepared)"
        )
    print()
    delivery.throughput_verdicts([run for runs in rounds for run in runs.values()])


def delivery_reading(setup: Setup, ratio: float, busy: float, cost: float, threads: int) -> str:
    """What a configuration's median ratio says, read with the machine's busy share and the workers' CPU a delivery
    against one direct process's (``cost``)."""
    cores = os.cpu_count() or 1
    if setup == BASELINE:
        return f"the yardstick: one process, {threads} threads, the machine {busy:.0%} busy"
    if setup.processes == 1:
        return f"{ratio:.2f}x: one process through PgBouncer (a hop more a statement, none prepared) against directly"
    waits_for = (
        f"PgBouncer's 10 server connections for {setup.processes * threads} threads, " if setup.via == "pooled" else ""
    )
    if ratio >= 0.9 * setup.processes:
        return f"{ratio:.2f}x: scales with the processes; nothing serialises up to {setup.processes}"
    if busy < FULL:
        return (
            f"{ratio:.2f}x with {1 - busy:.0%} of the CPUs idle: the processes wait for something other than cores "
            f"({waits_for}a row lock, a hot row, the broker)"
        )
    if cost > FLAT:
        return (
            f"{ratio:.2f}x, the CPUs {busy:.0%} busy and a delivery costs the workers {cost:.2f}x one process's CPU: "
            f"they contend ({setup.processes * threads} threads on {cores} cores switching, spinning or retrying)"
        )
    return (
        f"{ratio:.2f}x, the CPUs {busy:.0%} busy at about one process's worker CPU a delivery or less ({cost:.2f}x): "
        f"the limit is the {cores} cores, not a lock; a many-core run tells whether it scales past them"
    )


def delivery_part(args: argparse.Namespace, envs: dict[str, dict[str, str]]) -> None:
    setups = [Setup(processes, via) for processes in range(1, args.max_processes + 1) for via in VIAS]
    # Per round: each configuration's jobs and warm-up jobs (delivery.throughput: 4 per thread, 50 at least).
    jobs = sum(args.jobs + max(50, 4 * args.concurrency * setup.processes) for setup in setups) * args.rounds
    count = max(40, math.ceil(jobs / delivery.JOBS_PER_ACCOUNT))
    make_tls()
    with delivery.started_receiver(args.receiver_port) as (receiver, client):
        log(f"scale: seeding {count} Startup accounts for {len(setups)} configurations, {args.rounds} rounds")
        accounts = seed_accounts(count, prefix="scale", secrets=True)
        # What delivery.py's functions read from the arguments beyond ours: no other revision's workers.
        args_for_delivery = argparse.Namespace(**vars(args), against="")
        d = CountedDelivery(args_for_delivery, dict(delivery.APP_WORKER_ENV), receiver, client, accounts, "")
        rounds = delivery_rounds(d, setups, envs)
    delivery_report(rounds, setups, args.concurrency if args.pool == "threads" else 1)


# --- Accept --------------------------------------------------------------------------------------


def accept_part(args: argparse.Namespace, envs: dict[str, dict[str, str]]) -> None:
    # What accept.py's functions read beyond our options: this code on both sides, no line per request.
    accept_args = argparse.Namespace(**vars(args), against="", request_log="off")
    keys_per_round = accept.seed_keys(accept_args, args.rounds)
    rounds = []
    for number in range(args.rounds):
        runs = {
            via: accept.accept_run(accept_args, via, first_key=number * keys_per_round, env=envs[via])
            for via in (VIAS if number % 2 == 0 else VIAS[::-1])
        }
        rounds.append((runs["direct"], runs["pooled"]))
    directs, pooleds = [direct for direct, _ in rounds], [pooled for _, pooled in rounds]
    rows = [accept.accept_row(str(number), [run]) for number, pair in enumerate(rounds, start=1) for run in pair]
    rows += [accept.accept_row("median", directs), accept.accept_row("median", pooleds)] if len(rounds) > 1 else []
    print()
    table(accept.ACCEPT_COLUMNS, rows)
    print()
    shares = [pooled.rps / direct.rps if direct.rps else 0.0 for direct, pooled in rounds]
    share = median(shares)
    print(f"accept through PgBouncer against directly, req/s: {share:.1%}", end="")
    print(f" (per round: {', '.join(f'{value:.1%}' for value in shares)})")
    p99 = median(run.p99_ms for run in directs), median(run.p99_ms for run in pooleds)
    print(f"  p99: {p99[0]:.1f} ms directly, {p99[1]:.1f} ms through PgBouncer")
    cpu = {
        name: (median(d.helper_ms[name] for d in directs), median(p.helper_ms[name] for p in pooleds))
        for name in accept.HELPERS
    }
    cpu = {"gunicorn": (median(d.cpu_ms for d in directs), median(p.cpu_ms for p in pooleds)), **cpu}
    print(
        "  CPU ms a request, directly -> through PgBouncer: "
        + ", ".join(f"{name} {a:.2f} -> {b:.2f}" for name, (a, b) in cpu.items())
    )
    print(f"  what this says: {accept_reading(share, cpu)}")
    accept.errors_verdict(directs + pooleds)
    accept.run_notes(directs + pooleds)


def accept_reading(share: float, cpu: dict[str, tuple[float, float]]) -> str:
    """What the pooled/direct ratio says, with the CPU a request of each process on either side."""
    if share >= 0.95:
        return "within this VM's noise (see the A/A rows of RESULTS.md): the pooler costs the accept path little here"
    postgres = cpu["postgres"][1] - cpu["postgres"][0]
    return (
        f"{1 - share:.0%} fewer requests a second: PgBouncer takes {cpu['pgbouncer'][1]:.2f} ms of CPU a request and "
        f"PostgreSQL {postgres:+.2f} ms (behind the pooler nothing is prepared, so every statement is parsed and "
        "planned again), out of the cores gunicorn would otherwise have"
    )


# --- The subcommand ------------------------------------------------------------------------------


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "rounds", 3, "every configuration once, this many times; ratios take the median", env="scale")
    option(parser, "parts", "both", "delivery, accept or both", env="scale", choices=["both", "delivery", "accept"])
    option(parser, "max-processes", 3, "delivery: 1 to this many worker processes", env="scale")
    option(parser, "jobs", 5000, "delivery: jobs a run", env="scale")
    option(parser, "pool", "threads", "delivery: each worker's pool", env="scale", choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "delivery: each worker process's concurrency", env="scale")
    option(parser, "receiver-port", 8743, "delivery: the HTTPS receiver's port", env="scale")
    option(parser, "duration", 20, "accept: measured seconds per server", env="scale")
    option(parser, "warmup", 3, "accept: warm-up seconds per server", env="scale")
    option(parser, "connections", 16, "accept: wrk connections", env="scale")
    option(parser, "wrk-threads", 2, "accept: wrk threads", env="scale")
    option(parser, "port", 8771, "accept: gunicorn's port", env="scale")


def run(args: argparse.Namespace) -> None:
    parts = ("delivery", "accept") if args.parts == "both" else (args.parts,)
    if "accept" in parts and shutil.which("wrk") is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: apt-get install wrk")
    log(
        f"scale: {', '.join(parts)}; 1 to {args.max_processes} * --pool {args.pool} --concurrency {args.concurrency}, "
        f"directly and through PgBouncer, rounds: {args.rounds}"
    )
    with own_services(args), pgbouncer(args.database_url) as pooled:
        # Direct says so too, whatever the environment the bench was started in holds.
        envs = {"direct": {"DATABASE_POOLER": "none"}, "pooled": pooled}
        if "delivery" in parts:
            delivery_part(args, envs)
        if "accept" in parts:
            accept_part(args, envs)
