"""messages: ``POST /api/v1/apps/<app>/messages`` to 10 endpoints against single webhook sends under gunicorn.

The issue's target: a message fanned out to 10 endpoints accepts in at most 3x a single webhook send's time. The
accept bench's server and load (``accept.accept_run``, accept.lua), in alternating rounds: a run of single webhook
sends, then a run of messages, each on a fresh gunicorn and API keys of its own; every seeded account has an app
(uid ``bench``) with ``--endpoints`` endpoints taking every event type. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable
from statistics import median
from typing import Any

from bench import accept
from bench.accept import AcceptRun, Load
from bench.common import VAR_DIR, BenchError, log, option, own_services, table, verdict

HELP = "a message to 10 endpoints against a single webhook send: the time each accepts in"
# run.py: the database this bench recreates unless told another, apart from the other benches' notifyhub_bench.
DATABASE = "notifyhub_bench_messages"
APP_UID = "bench"
MESSAGE_PATH = f"/api/v1/apps/{APP_UID}/messages"
MAX_ENDPOINTS = 20  # customer_webhooks.models.ENDPOINTS_PER_APP (imported only once Django is set up)
# The target: a message to TARGET_ENDPOINTS endpoints accepts in at most MAX_TIME_OF_SINGLE x a single send's.
TARGET_ENDPOINTS = 10
MAX_TIME_OF_SINGLE = 3.0
# Each account's own quota (Account.monthly_limit): a message takes a unit per delivery, ten a request.
MONTHLY_LIMIT = 1_000_000_000
# Not accept's api-keys.txt: this bench may run beside the accept bench, on its own database.
KEYS_FILE = VAR_DIR / "api-keys-messages.txt"
MESSAGE_FILE = VAR_DIR / "bench-message.json"
# A message's fields but its idempotency key: the single send's payload, as accept.lua writes it, under an event type,
# so the bodies differ by the fan-out.
MESSAGE_FIELDS = {"eventType": "bench.ping", "payload": {"event": "bench.ping", "n": 0}}
# What wrk (or the instructions bench) sends as a message, once MESSAGE_FILE is written (message_file_written).
MESSAGE_LOAD = Load(path=MESSAGE_PATH, keys_file=KEYS_FILE, fields_file=MESSAGE_FILE)
TARGETS = ("single", "message")
COLUMNS = (
    "round<7|target<9|req/s>10.1f|mean ms>9.1f|p99 ms>9.1f|errors>8|requests>10|jobs stored>13|cpu ms/req>12.2f"
    "|other load>12.0%"
)


def message_file_written() -> None:
    """MESSAGE_FILE holding MESSAGE_FIELDS, which MESSAGE_LOAD sends."""
    MESSAGE_FILE.parent.mkdir(parents=True, exist_ok=True)
    MESSAGE_FILE.write_text(json.dumps(MESSAGE_FIELDS))


def seed_apps(endpoints: int) -> None:
    """An app with ``endpoints`` endpoints taking every type in every seeded account (the keys of both targets),
    written in bulk: the same encrypted secret for all, which the accept path never reads."""
    from accounts.models import Account
    from core.crypto import encrypt
    from customer_webhooks.models import App, Endpoint

    apps = App.objects.bulk_create(App(account=account, uid=APP_UID, name="Bench") for account in Account.objects.all())
    secret = encrypt("whsec_" + "A" * 43)
    Endpoint.objects.bulk_create(
        (
            Endpoint(app=app, url=f"https://hooks.example.com/customer-{number}", encrypted_secret=secret)
            for app in apps
            for number in range(endpoints)
        ),
        batch_size=5000,
    )


def row(label: str, runs: list[AcceptRun]) -> tuple[Any, ...]:
    """Medians of the rates, latencies and CPU; totals of the counts; the busiest run's other load."""

    def middle(get: Callable[[AcceptRun], float]) -> float:
        return median(get(run) for run in runs)

    return (
        label,
        runs[0].target,
        middle(lambda run: run.rps),
        middle(lambda run: run.mean_ms),
        middle(lambda run: run.p99_ms),
        sum(run.errors for run in runs),
        sum(run.requests for run in runs),
        sum(run.jobs_stored for run in runs),
        middle(lambda run: run.cpu_ms),
        max(run.other_load for run in runs),
    )


def judge_time(label: str, ratios: list[float]) -> None:
    """The median over rounds of message/single, each message run against the single run before it in its round."""
    ratio = median(ratios)
    verdict(label, f"{ratio:.2f}x", f"<= {MAX_TIME_OF_SINGLE:.0f}x", ratio <= MAX_TIME_OF_SINGLE)
    if len(ratios) > 1:
        print(f"  per round: {', '.join(f'{value:.2f}x' for value in ratios)} (the verdict takes the median)")


def deliveries_a_message() -> float:
    """The deliveries stored for each message stored, over every run, warm-ups included."""
    from customer_webhooks.models import Message
    from notifications.models import Job

    return Job.objects.filter(message__isnull=False).count() / max(Message.objects.count(), 1)


def report(args: argparse.Namespace, rounds: list[tuple[AcceptRun, AcceptRun]], fanned: float) -> None:
    singles, messages = [single for single, _ in rounds], [message for _, message in rounds]
    rows = [row(str(number), [run]) for number, pair in enumerate(rounds, start=1) for run in pair]
    rows += [row("median", singles), row("median", messages)] if len(rounds) > 1 else []
    print()
    table(COLUMNS, rows)
    print()
    print(f"a message to {args.endpoints} endpoints accepts in at most {MAX_TIME_OF_SINGLE:.0f}x a single send's time:")
    pairs = list(rounds)
    judge_time(
        "message/single mean latency", [message.mean_ms / max(single.mean_ms, 1e-9) for single, message in pairs]
    )
    if args.endpoints != TARGET_ENDPOINTS:
        print(f"  note: the target is set for messages to {TARGET_ENDPOINTS} endpoints; these had {args.endpoints}")
    verdict("deliveries a message", f"{fanned:.2f}", f"= {args.endpoints}", fanned == args.endpoints)
    cpu = median(message.cpu_ms / max(single.cpu_ms, 1e-9) for single, message in pairs)
    print(f"  gunicorn CPU per request: a message {cpu:.2f}x a single send's (not a target; explains the ratio)")
    accept.errors_verdict(singles + messages)
    accept.run_notes(singles + messages)
    if max(run.rps for run in singles + messages) > accept.MAX_RPS:
        print(f"  note: a run went above {accept.MAX_RPS} req/s; some keys may have met the rate limit")


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "duration", 20, "measured seconds per run", env="messages")
    option(parser, "warmup", 3, "warm-up seconds per run", env="messages")
    option(
        parser, "rounds", 3, "single sends then messages, this many times; verdicts take the medians", env="messages"
    )
    option(
        parser, "endpoints", TARGET_ENDPOINTS, f"endpoints each message reaches, 1 to {MAX_ENDPOINTS}", env="messages"
    )
    option(parser, "connections", 16, "wrk connections", env="messages")
    option(parser, "wrk-threads", 2, "wrk threads (wrk shares the CPUs with the server)", env="messages")
    option(parser, "port", 8821, "gunicorn's port", env="messages")


def run(args: argparse.Namespace) -> None:
    if shutil.which("wrk") is None:
        raise BenchError("wrk is not installed; on Debian/Ubuntu: apt-get install wrk")
    if not 1 <= args.endpoints <= MAX_ENDPOINTS:
        raise BenchError(f"--endpoints must be 1 to {MAX_ENDPOINTS}, not {args.endpoints}")
    log(
        f"messages: wrk -t{args.wrk_threads} -c{args.connections}, {args.duration} s a run, single webhook sends then "
        f"messages to {args.endpoints} endpoints, rounds: {args.rounds}"
    )
    # What accept.py's functions read beyond our options: this code's app, no line per request.
    accept_args = argparse.Namespace(**vars(args), against="", request_log="off")
    loads = {
        "single": Load(keys_file=KEYS_FILE),
        "message": MESSAGE_LOAD,
    }
    with own_services(args):
        message_file_written()
        runs = len(TARGETS) * args.rounds
        keys_per_run = accept.seed_keys(
            accept_args, runs, keys_file=KEYS_FILE, prefix="messages", monthly_limit=MONTHLY_LIMIT
        )
        log(f"messages: an app with {args.endpoints} endpoints in each of {keys_per_run * runs} accounts")
        seed_apps(args.endpoints)
        rounds = []
        for number in range(args.rounds):
            single, message = [
                accept.accept_run(
                    accept_args, target, first_key=(number * len(TARGETS) + index) * keys_per_run, load=loads[target]
                )
                for index, target in enumerate(TARGETS)
            ]
            rounds.append((single, message))
        fanned = deliveries_a_message()
    report(args, rounds, fanned)
