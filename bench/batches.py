"""batches: ``POST /api/v1/notifications/webhook/batch`` against single sends under gunicorn, loaded with wrk.

The issue's target: a batch of 100 accepts in under 10x a single send's time. The accept bench's server and load
(``accept.accept_run``, accept.lua), in alternating rounds: a run of single webhook sends, then a run of batches of
``--batch-size`` webhook sends, each on a fresh gunicorn and API keys of its own. bench/README.md says how to read the
report.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from statistics import median
from typing import Any

from bench import accept
from bench.accept import AcceptRun, Load
from bench.common import ACCEPT_PATH, VAR_DIR, BenchError, log, option, own_services, table, verdict

HELP = "webhook batches against single sends: jobs accepted a second"
# run.py: the database this bench recreates unless told another, apart from the other benches' notifyhub_bench.
DATABASE = "notifyhub_bench_batches"
BATCH_PATH = f"{ACCEPT_PATH}/batch"
MAX_ITEMS = 100  # notifications.batches.BATCH_MAX_ITEMS (imported only once Django is set up)
# The target: a batch of TARGET_ITEMS accepts in under MAX_TIME_OF_SINGLE x a single send's time.
TARGET_ITEMS = 100
MAX_TIME_OF_SINGLE = 10.0
# Each account's own quota (Account.monthly_limit): a key of a batch run may send up to REQUESTS_PER_KEY batches of
# 100, as many jobs as the Startup plan's whole month; no run may meet the quota.
MONTHLY_LIMIT = 1_000_000_000
# Not accept's api-keys.txt: this bench may run beside the accept bench, on its own database.
KEYS_FILE = VAR_DIR / "api-keys-batches.txt"
TARGETS = ("single", "batch")
COLUMNS = (
    "round<7|target<8|req/s>10.1f|jobs/s>10.1f|mean ms>9.1f|p99 ms>9.1f|errors>8|requests>10|jobs stored>13"
    "|cpu ms/req>12.2f|cpu ms/job>12.3f|other load>12.0%"
)


def jobs_per_second(run: AcceptRun) -> float:
    """Jobs the 202 answers accepted a second: req/s for single sends, req/s x the batch size for batches."""
    return run.rps * run.jobs / max(run.requests, 1)


def cpu_ms_per_job(run: AcceptRun) -> float:
    """gunicorn's CPU per accepted job."""
    return run.cpu_ms * run.requests / max(run.jobs, 1)


def row(label: str, runs: list[AcceptRun]) -> tuple[Any, ...]:
    """Medians of the rates, latencies and CPU; totals of the counts; the busiest run's other load."""

    def middle(get: Callable[[AcceptRun], float]) -> float:
        return median(get(run) for run in runs)

    return (
        label,
        runs[0].target,
        middle(lambda run: run.rps),
        middle(jobs_per_second),
        middle(lambda run: run.mean_ms),
        middle(lambda run: run.p99_ms),
        sum(run.errors for run in runs),
        sum(run.requests for run in runs),
        sum(run.jobs_stored for run in runs),
        middle(lambda run: run.cpu_ms),
        middle(cpu_ms_per_job),
        max(run.other_load for run in runs),
    )


def judge_time(label: str, ratios: list[float]) -> None:
    """The median over rounds of batch/single, each batch run against the single run before it in its round."""
    ratio = median(ratios)
    verdict(label, f"{ratio:.2f}x", f"< {MAX_TIME_OF_SINGLE:.0f}x", ratio < MAX_TIME_OF_SINGLE)
    if len(ratios) > 1:
        print(f"  per round: {', '.join(f'{value:.2f}x' for value in ratios)} (the verdict takes the median)")


def report(args: argparse.Namespace, rounds: list[tuple[AcceptRun, AcceptRun]]) -> None:
    singles, batches = [single for single, _ in rounds], [batch for _, batch in rounds]
    rows = [row(str(number), [run]) for number, pair in enumerate(rounds, start=1) for run in pair]
    rows += [row("median", singles), row("median", batches)] if len(rounds) > 1 else []
    print()
    table(COLUMNS, rows)
    print()
    print(f"a batch of {args.batch_size} accepts in under {MAX_TIME_OF_SINGLE:.0f}x a single send's time:")
    judge_time("batch/single mean latency", [batch.mean_ms / max(single.mean_ms, 1e-9) for single, batch in rounds])
    judge_time("batch/single gunicorn CPU/req", [batch.cpu_ms / max(single.cpu_ms, 1e-9) for single, batch in rounds])
    if args.batch_size != TARGET_ITEMS:
        print(f"  note: the target is set for batches of {TARGET_ITEMS}; these had {args.batch_size}")
    jobs = [jobs_per_second(batch) / max(jobs_per_second(single), 1e-9) for single, batch in rounds]
    print(f"jobs/s, batch / single: {median(jobs):.2f}x", end="")
    print(f" (per round: {', '.join(f'{value:.2f}x' for value in jobs)}; not a target)" if len(jobs) > 1 else "")
    accept.errors_verdict(singles + batches)
    accept.run_notes(singles + batches)
    if max(run.rps for run in singles + batches) > accept.MAX_RPS:
        print(f"  note: a run went above {accept.MAX_RPS} req/s; some keys may have met the rate limit")


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "duration", 20, "measured seconds per run", env="batches")
    option(parser, "warmup", 3, "warm-up seconds per run", env="batches")
    option(parser, "rounds", 3, "single sends then batches, this many times; verdicts take the medians", env="batches")
    option(parser, "batch-size", 100, f"webhook sends a batch, 1 to {MAX_ITEMS}", env="batches")
    option(parser, "connections", 16, "wrk connections", env="batches")
    option(parser, "wrk-threads", 2, "wrk threads (wrk shares the CPUs with the server)", env="batches")
    option(parser, "port", 8811, "gunicorn's port", env="batches")


def run(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: apt-get install wrk")
    if not 1 <= args.batch_size <= MAX_ITEMS:
        raise BenchError(f"--batch-size must be 1 to {MAX_ITEMS}, not {args.batch_size}")
    log(
        f"batches: wrk -t{args.wrk_threads} -c{args.connections}, {args.duration} s a run, single sends then batches "
        f"of {args.batch_size}, rounds: {args.rounds}"
    )
    # What accept.py's functions read beyond our options: this code's app, no line per request.
    accept_args = argparse.Namespace(**vars(args), against="", request_log="off")
    loads = {
        "single": Load(keys_file=KEYS_FILE),
        "batch": Load(path=BATCH_PATH, items=args.batch_size, keys_file=KEYS_FILE),
    }
    with own_services(args):
        # Keys of its own for every run (the rate limit counts a batch as one request, as a single send); each
        # account's own monthly limit, so the quota never refuses a batch.
        runs = len(TARGETS) * args.rounds
        keys_per_run = accept.seed_keys(
            accept_args, runs, keys_file=KEYS_FILE, prefix="batches", monthly_limit=MONTHLY_LIMIT
        )
        rounds = []
        for number in range(args.rounds):
            single, batch = [
                accept.accept_run(
                    accept_args, target, first_key=(number * len(TARGETS) + index) * keys_per_run, load=loads[target]
                )
                for index, target in enumerate(TARGETS)
            ]
            rounds.append((single, batch))
    report(args, rounds)
