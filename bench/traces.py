"""traces: the accept path and webhook delivery with traces on, exported to a local OTLP receiver, against off.

Each round runs a part with ``OTEL_EXPORTER_OTLP_ENDPOINT`` unset (``off``, as production runs without a collector),
then set (``on``) to the OTLP/HTTP receiver of tests/fakes/otlp.py in this process, which decodes every batch as a
collector does. Accept: the accept bench's gunicorn under wrk's webhook sends (``accept.accept_run``). Delivery: the
delivery bench's workers delivering jobs this process stores (``delivery.throughput``), each task a trace of its own.
bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import math

from bench.accept import ACCEPT_COLUMNS, AcceptRun, accept_row, accept_run, errors_verdict, seed_keys
from bench.common import judge_rounds, log, make_tls, option, own_services, seed_accounts, table
from bench.delivery import (
    APP_WORKER_ENV,
    JOBS_PER_ACCOUNT,
    THROUGHPUT_COLUMNS,
    Delivery,
    DeliveryRun,
    started_receiver,
    throughput,
    throughput_verdicts,
)
from tests.fakes.otlp import OtlpReceiver

HELP = "accept and delivery with traces on, to a local OTLP receiver, against off"
# What tracing may cost the paths users feel (docs/observability.md, "Traces").
MIN_TRACED_SHARE = 0.80
PARTS = ("accept", "delivery")


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "parts", ",".join(PARTS), "which parts, comma-separated: accept, delivery", env="traces")
    option(parser, "rounds", 3, "off then on, this many times per part; the verdicts take the median", env="traces")
    option(parser, "duration", 20, "accept: measured seconds per server", env="traces")
    option(parser, "warmup", 3, "accept: warm-up seconds per server", env="traces")
    option(parser, "connections", 16, "accept: wrk connections", env="traces")
    option(parser, "wrk-threads", 2, "accept: wrk threads", env="traces")
    option(parser, "port", 8771, "accept: gunicorn's port", env="traces")
    option(parser, "jobs", 3000, "delivery: jobs per run", env="traces")
    option(parser, "pool", "threads", "delivery: worker pool", env="traces", choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "delivery: worker concurrency", env="traces")
    option(parser, "processes", 2, "delivery: worker processes side by side", env="traces")
    option(parser, "receiver-port", 8743, "delivery: the HTTPS receiver's port", env="traces")


def run(args: argparse.Namespace) -> None:
    parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    if unknown := set(parts) - set(PARTS):
        raise SystemExit(f"unknown parts: {', '.join(sorted(unknown))}")
    # What the accept and delivery benches' runs read beside these options: this code on both sides, webhook sends,
    # no request lines (a line costs the same with traces on or off, but for its two ids), PostgreSQL directly.
    args.against, args.send, args.request_log, args.via = "", "webhook", "off", "direct"
    log(f"traces: {', '.join(parts)}, {args.rounds} rounds of off then on")
    make_tls()
    with OtlpReceiver(keep=False) as collector:
        traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
        for part in parts:
            # Each part on a fresh database and broker: the accept part's jobs are never delivered.
            with own_services(args):
                (accept_part if part == "accept" else delivery_part)(args, traced, collector)


def accept_part(args: argparse.Namespace, traced: dict[str, str], collector: OtlpReceiver) -> None:
    keys_per_round = seed_keys(args, args.rounds)
    rounds: list[tuple[AcceptRun, AcceptRun]] = []
    spans = []
    for number in range(args.rounds):
        first_key = number * keys_per_round
        off = accept_run(args, "off", first_key=first_key)
        before = collector.received
        on = accept_run(args, "on", first_key=first_key, env=traced)
        spans.append((collector.received - before) / max(on.requests, 1))
        rounds.append((off, on))
    print()
    table(ACCEPT_COLUMNS, [accept_row(str(n), [run]) for n, pair in enumerate(rounds, start=1) for run in pair])
    print()
    judge_rounds("accept on/off req/s", [(on.rps, off.rps) for off, on in rounds], MIN_TRACED_SHARE)
    errors_verdict([run for pair in rounds for run in pair])
    print(f"  spans received per request with traces on (warm-up included): {', '.join(f'{n:.1f}' for n in spans)}")


def delivery_part(args: argparse.Namespace, traced: dict[str, str], collector: OtlpReceiver) -> None:
    from notifyhub.celery import app as celery_app

    celery_app.set_current()  # the jobs' tasks are published by the app's producer, which uses the current app
    count = max(40, math.ceil((args.jobs + 200) * 2 * args.rounds / JOBS_PER_ACCOUNT))
    with started_receiver(args.receiver_port, close=False) as (receiver, client):
        log(f"traces: seeding {count} Startup accounts")
        accounts = seed_accounts(count, prefix="delivery", secrets=True)
        runs: list[DeliveryRun] = []
        spans = []
        for number in range(1, args.rounds + 1):
            for target, env in (("off", APP_WORKER_ENV), ("on", {**APP_WORKER_ENV, **traced})):
                before = collector.received
                runs.append(throughput(Delivery(args, env, receiver, client, accounts, ""), target, number))
                if target == "on":
                    spans.append((collector.received - before) / max(runs[-1].arrived, 1))
    print()
    table(THROUGHPUT_COLUMNS, [run.row() for run in runs])
    print()
    pairs = [(on.rate, off.rate) for off, on in zip(runs[0::2], runs[1::2], strict=True)]
    judge_rounds("delivery on/off deliveries/s", pairs, MIN_TRACED_SHARE)
    throughput_verdicts(runs)
    print(f"  spans received per delivery with traces on (warm-up included): {', '.join(f'{n:.1f}' for n in spans)}")
