"""rate-limit: an app's endpoint limited to 10 deliveries a second beside an unlimited one, on the app's workers.

Each round delivers ``--jobs`` messages to the unlimited endpoint alone (the baseline) and the same number again
with the limited endpoint's deliveries interleaved among them: enough of those to keep it busy for half as long again
as the baseline took. Odd rounds run the baseline first, even rounds second. The limited endpoint must receive
10 ± 1 a second, in every full second of its run, and the unlimited one's deliveries a second must stay at least 0.90
of its baseline: a delivery whose turn is to come is stored locked until then and left to the dispatcher, and no
worker takes it up before (docs/customer-webhooks.md, "Rate limit"). The workers' CPU a delivery, in either run, is
printed beside. bench/README.md says how to read it.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

from bench.common import (
    Proc,
    Sample,
    celery_beat,
    judge_rounds,
    log,
    make_tls,
    option,
    own_services,
    seed_accounts,
    table,
    verdict,
)
from bench.delivery import APP_WORKER_ENV, PAYLOAD, STALL_SECONDS, Delivery, enqueue, started_receiver, warmed_up
from bench.delivery import workers as app_workers

HELP = "an endpoint limited to 10/s beside an unlimited one: its pace, and the other's throughput against alone"
MIN_UNLIMITED_SHARE = 0.90
# The limited endpoint's deliveries, as a share of the baseline's seconds: it stays busy past the unlimited run.
LIMITED_SPAN = 1.5
COLUMNS = (
    "round>5|alone/s>8.1f|beside/s>9.1f|share>6.0%|limited>8|lim/s>6.2f|min s>6|max s>6|wall s>7.2f"
    "|ms alone>9.2f|ms beside>10.2f"
)


@dataclass(frozen=True)
class Endpoints:
    unlimited: object  # customer_webhooks.models.Endpoint; Django is imported only once it is set up
    limited: object


@dataclass(frozen=True)
class PacedRound:
    number: int
    alone: float  # unlimited deliveries a second, alone
    beside: float  # the same, beside the limited endpoint's
    limited: int
    limited_rate: float  # its arrivals a second, first to last
    per_second: list[int]  # its arrivals in each full second of its run
    seconds: float
    every_one: bool
    cpu_ms: tuple[float, float]  # the workers' CPU a delivery, alone and beside (the limited endpoint's counted)

    def row(self) -> tuple[object, ...]:
        share = self.beside / self.alone if self.alone else math.nan
        counts = min(self.per_second, default=0), max(self.per_second, default=0)
        return (
            self.number,
            self.alone,
            self.beside,
            share,
            self.limited,
            self.limited_rate,
            *counts,
            self.seconds,
            *self.cpu_ms,
        )


def endpoints_of(d: Delivery, rate_limit: int) -> Endpoints:
    """An app of the first account with the two endpoints on the receiver, both signed with the account's secret (the
    receiver counts signed deliveries)."""
    from core.crypto import encrypt
    from customer_webhooks.models import App, Endpoint

    account, secret = d.accounts[0].account, d.accounts[0].secret or ""
    app = App.objects.create(account=account, uid="bench", name="Bench customer")
    base = f"https://127.0.0.1:{d.args.receiver_port}/hooks"

    def endpoint(path: str, limit: int | None) -> object:
        url, encrypted = f"{base}/{path}", encrypt(secret)
        return Endpoint.objects.create(app=app, url=url, encrypted_secret=encrypted, rate_limit=limit)

    return Endpoints(endpoint("unlimited", None), endpoint("limited", rate_limit))


def messages(endpoints: list[object]) -> list[str]:
    """A message and its one delivery per endpoint in ``endpoints`` (in that order), each delivery made as the
    messages API makes it (notifications.services.message_delivery_new: a limited endpoint's given its turn, locked
    until then and left to the dispatcher), stored in one INSERT, then the dispatcher asked to run for those due
    for it already and the tasks of those due now published from here, as jobs_store_together does at commit: the
    workers' CPU goes to deliveries alone, as in the delivery bench. The message ids, which the receiver records
    as X-Webhook-Id."""
    from customer_webhooks.models import Message
    from notifications.engine.queue import dispatch_soon, jobs_enqueue
    from notifications.models import Job
    from notifications.services import message_delivery_new

    app = endpoints[0].app
    stored = [Message(account=app.account, app=app, event_type="invoice.paid", payload=PAYLOAD) for _ in endpoints]
    Message.objects.bulk_create(stored)
    jobs = [
        message_delivery_new(
            account=app.account,
            message_id=message.id,
            endpoint_id=endpoint.id,
            payload={"url": endpoint.url, "method": "POST", "payload": PAYLOAD, "eventType": "invoice.paid"},
            url_credentials=None,
            max_attempts=8,
            rate_limit=endpoint.rate_limit,
            test=False,
        )
        for message, endpoint in zip(stored, endpoints, strict=True)
    ]
    Job.objects.bulk_create(jobs)
    # First: a commit's two publishes take a moment, while these thousands take seconds, which would make the first
    # turns late.
    if any(job.locked_until is not None for job in jobs):
        dispatch_soon()
    jobs_enqueue([(job.id, job.priority) for job in jobs if job.locked_until is None])
    return [str(message.id) for message in stored]


@dataclass(frozen=True)
class Run:
    ids: list[str]
    arrived: dict[str, float]  # each id's first arrival, monotonic seconds on the receiver's clock
    start: float  # when publishing began
    cpu_ms: float  # the workers' CPU a delivery

    @property
    def seconds(self) -> float:
        return max(self.arrived.values()) - self.start


def deliver(d: Delivery, procs: list[Proc], order: list[object]) -> Run:
    """Sends ``order``'s messages to a receiver cleared of the run before (its arrivals would make the wait fetch
    them all every 50 ms: CPU taken from the workers of the second run only)."""
    d.client.reset()
    sources = {"worker": lambda: sum(proc.cpu() for proc in procs)}
    before, started = Sample.take(**sources), time.monotonic()  # the receiver's clock
    ids = messages(order)
    dump = d.client.wait_for(ids, stall_seconds=STALL_SECONDS)
    worker_seconds = Sample.take(**sources).cpu_since(before)["worker"]
    return Run(ids, dump.first_arrivals(ids), started, cpu_ms=worker_seconds * 1000 / len(ids))


def interleaved(e: Endpoints, jobs: int, limited_count: int) -> list[object]:
    """The limited endpoint's deliveries spread through the unlimited one's, as a steady stream would queue them."""
    step = max(1, jobs // limited_count)
    order = [e.unlimited] * jobs
    for place in range(limited_count):
        order.insert(min(place * (step + 1), len(order)), e.limited)
    return order


def paced_round(d: Delivery, procs: list[Proc], e: Endpoints, number: int, alone_seconds: float) -> PacedRound:
    """Odd rounds deliver alone first, even rounds beside first (sized by the last alone run): a drift of the
    machine's speed over the minutes favours neither side."""
    jobs, rate_limit = d.args.jobs, d.args.rate_limit
    alone_first = number % 2 == 1
    if alone_first:
        log(f"rate-limit: round {number}, {jobs} deliveries to the unlimited endpoint alone")
        alone = deliver(d, procs, [e.unlimited] * jobs)
        alone_seconds = alone.seconds
    limited_count = max(rate_limit * 3, math.ceil(rate_limit * alone_seconds * LIMITED_SPAN))
    log(f"rate-limit: round {number}, {jobs} beside {limited_count} to the endpoint limited to {rate_limit}/s")
    order = interleaved(e, jobs, limited_count)
    beside = deliver(d, procs, order)
    if not alone_first:
        log(f"rate-limit: round {number}, {jobs} deliveries to the unlimited endpoint alone")
        alone = deliver(d, procs, [e.unlimited] * jobs)
    unlimited_ids = {id_ for id_, endpoint in zip(beside.ids, order, strict=True) if endpoint is e.unlimited}
    unlimited_times = [at for id_, at in beside.arrived.items() if id_ in unlimited_ids]
    limited_times = sorted(at for id_, at in beside.arrived.items() if id_ not in unlimited_ids)
    span = limited_times[-1] - limited_times[0] if len(limited_times) > 1 else math.nan
    full_seconds = int(span) if span == span else 0
    per_second = [
        sum(1 for at in limited_times if limited_times[0] + k <= at < limited_times[0] + k + 1)
        for k in range(full_seconds)
    ]
    return PacedRound(
        number,
        alone=len(alone.arrived) / alone.seconds,
        beside=len(unlimited_times) / (max(unlimited_times) - beside.start),
        limited=len(limited_times),
        limited_rate=(len(limited_times) - 1) / span if span else math.nan,
        per_second=per_second,
        seconds=beside.seconds,
        every_one=len(alone.arrived) == len(alone.ids) and len(beside.arrived) == len(beside.ids),
        cpu_ms=(alone.cpu_ms, beside.cpu_ms),
    )


def paced_rounds(d: Delivery, procs: list[Proc], e: Endpoints) -> list[PacedRound]:
    rounds: list[PacedRound] = []
    for number in range(1, d.args.rounds + 1):
        alone_seconds = d.args.jobs / rounds[-1].alone if rounds else math.nan  # unread in round 1, alone first
        rounds.append(paced_round(d, procs, e, number, alone_seconds))
    return rounds


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "jobs", 6000, "deliveries to the unlimited endpoint per run", env="rate_limit")
    option(parser, "rate-limit", 10, "the limited endpoint's deliveries a second", env="rate_limit")
    option(
        parser,
        "rounds",
        4,
        "alone and beside, this many times, in turn first; the verdict takes the median",
        env="rate_limit",
    )
    option(parser, "pool", "threads", "worker pool", env="rate_limit", choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "worker concurrency", env="rate_limit")
    option(parser, "processes", 2, "worker processes side by side (one per core)", env="rate_limit")
    option(parser, "receiver-port", 8744, "the HTTPS receiver's port", env="rate_limit")


def run(args: argparse.Namespace) -> None:
    log(f"rate-limit: {args.processes} * --pool {args.pool} --concurrency {args.concurrency}, rounds: {args.rounds}")
    make_tls()
    with own_services(args), started_receiver(args.receiver_port, name="receiver-ratelimit") as (proc, client):
        accounts = seed_accounts(1, prefix="ratelimit", secrets=True)
        d = Delivery(args, dict(APP_WORKER_ENV), proc, client, accounts, floor_secret="")
        e = endpoints_of(d, args.rate_limit)
        # Beat's dispatcher too, as the Procfile runs it: a delivery whose turn is seconds away is left to it.
        with app_workers(d, "app") as procs, celery_beat("beat-ratelimit", env=d.env):
            warmed_up(d, procs, enqueue(d, "app", max(50, 4 * args.concurrency * args.processes)))
            rounds = paced_rounds(d, procs, e)
    print()
    table(COLUMNS, [paced.row() for paced in rounds])
    print()
    judge_rounds("unlimited beside/alone deliveries/s", [(r.beside, r.alone) for r in rounds], MIN_UNLIMITED_SHARE)
    low, high = args.rate_limit - 1, args.rate_limit + 1
    seconds = [count for paced in rounds for count in paced.per_second]
    verdict(
        "limited endpoint's deliveries in each full second",
        f"{min(seconds, default=0)}..{max(seconds, default=0)}",
        f"{low}..{high}",
        bool(seconds) and low <= min(seconds) and max(seconds) <= high,
    )
    every_one = all(paced.every_one for paced in rounds)
    verdict("every delivery arrived", "yes" if every_one else "no", "all", every_one)
