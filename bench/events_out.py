"""event-endpoints: what pushing job events to the accounts' event endpoints costs the jobs, and how soon they arrive.

Throughput: the delivery bench's throughput run (``delivery.throughput``: jobs stored as the API stores them, the clock
from the commit to the last job's arrival), with one event endpoint per account subscribed to ``job.completed``, then
with none, round after round, the same code on both sides. The events go to a receiver of their own, so jobs and
events are counted apart; after every run the bench waits until each event arrived and its delivery was recorded
(outside the clock), so no round's events are still being delivered when the next starts.
Latency: gunicorn and the app's workers, sends at a steady rate through the API, each account with its endpoint, from
a job's request sent to its event's arrival. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench import delivery
from bench.common import (
    REQUESTS_PER_KEY,
    BenchError,
    Proc,
    Sample,
    gunicorn,
    judge_rounds,
    log,
    make_tls,
    option,
    own_services,
    percentile,
    seed_accounts,
    table,
    verdict,
)
from bench.delivery import Delivery, DeliveryRun
from bench.receiver import Dump, ReceiverClient

HELP = "job events pushed to event endpoints: jobs/s with one against none, and latency"
MIN_SHARE_OF_NONE = 0.90  # the issue: emitting must not slow what causes it
MAX_EVENT_P99_MS = 1000.0
EVENT_TYPE = "job.completed"
EVENTS_PATH = "/events"
POLL_SECONDS = 0.2
TARGETS = ("endpoint", "none")  # a round: each account with one subscribed endpoint, then with none
ROUND_COLUMNS = (
    "target<9|#>2|jobs/s>9.1f|wall s>8.2f|arrived>12|dup>5|sig>7|events>12|early>6|ev dup>7|ev sig>7|drain s>8.2f"
    "|wkr ms>8.2f|+drain>8.2f|pg ms>7.2f|busy>6.0%|before>7.0%"
)
LATENCY_COLUMNS = "to<7|p50 ms>9.1f|p95 ms>9.1f|p99 ms>9.1f|max ms>9.1f|arrived>12|dup>5|sig>7"


@dataclass(frozen=True)
class Events:
    """The events of one set of jobs: stored, then arrived at the events receiver, and what waiting for them cost."""

    jobs: int
    expected: int  # one a job with an endpoint subscribed, none without
    stored: int  # event rows about these jobs
    one_each: int  # jobs with exactly one event row
    stray: int  # event rows stored since, of another type or about another job
    arrived: int  # stored events that reached the events receiver
    early: int  # of those, the ones that arrived before the last job did (within the jobs' clock)
    duplicates: int  # their requests beyond the first
    requests: int  # every request the events receiver had
    signatures: tuple[int, int]  # sampled requests with an event of these jobs, validly signed; of those sampled
    seconds: float  # from the last job's arrival to the last event's (NaN without events)
    cpu: dict[str, float]  # CPU seconds while the bench waited for the events and their records
    job_of: dict[str, str]  # each stored event's job
    first: dict[str, float]  # each arrived event's first arrival

    @property
    def ok(self) -> bool:
        counts = self.stored == self.one_each == self.arrived == self.requests == self.expected
        return counts and not (self.stray or self.duplicates) and self.signatures[0] == self.signatures[1]


@dataclass
class EventsDelivery(Delivery):
    """The delivery bench's machinery, with a second receiver for the events and a wait, after each run, for the
    events its jobs set off (``settled``), whose outcomes pile up in ``events``."""

    events_receiver: Proc | None = None
    events_client: ReceiverClient | None = None
    subscribed: bool = False  # whether each account has its endpoint now
    events: list[Events] = field(default_factory=list)

    @property
    def events_url(self) -> str:
        return f"https://127.0.0.1:{self.args.events_receiver_port}{EVENTS_PATH}"

    def sources(self, procs: list[Proc], **more: Callable[[], float]) -> dict[str, Callable[[], float]]:
        assert self.events_receiver is not None
        return super().sources(procs, **more, events_receiver=self.events_receiver.cpu)

    def settled(self, procs: list[Proc], ids: list[str]) -> None:
        """Waits until every job of ``ids`` has its event stored, each arrived and each delivery is recorded; then
        clears the events receiver for the next run. No event of the jobs arriving at all means the app does not
        deliver them: the bench cannot measure them, and says what the database holds."""
        from django.db.models import Min
        from django.utils import timezone

        from event_endpoints.models import Event, EventDelivery
        from event_endpoints.queue import UNFINISHED
        from notifications.models import Job

        assert self.events_client is not None
        sources = self.sources(procs)
        started = Sample.take(**sources)
        since = Job.objects.filter(id__in=ids).aggregate(first=Min("created_at"))["first"] or timezone.now()
        expected = len(ids) if self.subscribed else 0
        stored_since = Event.objects.filter(created_at__gte=since)
        stall_until(stored_since.count, lambda count: count >= expected)
        rows = list(stored_since.values_list("id", "type", "data"))
        wanted = set(ids)
        job_of = {
            str(event_id): str(data.get("id"))
            for event_id, event_type, data in rows
            if event_type == EVENT_TYPE and str(data.get("id")) in wanted
        }
        dump = self.events_client.wait_for(list(job_of), stall_seconds=delivery.STALL_SECONDS)
        unfinished = EventDelivery.objects.filter(created_at__gte=since, status__in=UNFINISHED)
        stall_until(unfinished.count, lambda count: count == 0)
        ended = Sample.take(**sources)
        first = dump.first_arrivals(job_of)
        per_job = Counter(job_of.values())
        if expected and not first:
            raise BenchError(self.undelivered(len(ids), len(job_of), procs))
        self.events.append(
            Events(
                jobs=len(ids),
                expected=expected,
                stored=len(job_of),
                one_each=sum(count == 1 for count in per_job.values()),
                stray=len(rows) - len(job_of),
                arrived=len(first),
                early=sum(arrival < started.at for arrival in first.values()),
                duplicates=dump.duplicates(job_of),
                requests=sum(len(times) for times in dump.arrivals.values()),
                signatures=self.event_signatures(dump, job_of),
                seconds=max(first.values()) - started.at if first else math.nan,
                cpu=ended.cpu_since(started),
                job_of=job_of,
                first=first,
            )
        )
        self.events_client.reset()

    def event_signatures(self, dump: Dump, job_of: dict[str, str]) -> tuple[int, int]:
        """Sampled requests that carry a stored event of these jobs, as the event's own body (its id, type and job),
        validly signed with the account's secret; of those sampled plus those unsigned."""
        from core.signing import verify_signature

        secrets = [seeded.secret or "" for seeded in self.accounts]

        def good(sample: dict[str, str]) -> bool:
            try:
                body = json.loads(sample["body"])
                event_id, job_id = body["id"], body["data"]["id"]
            except (ValueError, KeyError, TypeError):
                return False
            raw = sample["body"].encode()
            right = body.get("type") == EVENT_TYPE and job_of.get(event_id) == job_id
            return right and any(verify_signature(secret, sample["signature"], raw) for secret in secrets)

        return sum(good(sample) for sample in dump.samples), len(dump.samples) + dump.unsigned

    def undelivered(self, jobs: int, stored: int, procs: list[Proc]) -> str:
        """What the database says about events that never arrived."""
        from event_endpoints.models import EventDelivery

        statuses = Counter(EventDelivery.objects.values_list("status", flat=True))
        errors = Counter(
            EventDelivery.objects.exclude(error_message=None).values_list("error_message", flat=True)
        ).most_common(3)
        return (
            f"no event of {jobs} jobs arrived at {self.events_url} ({stored} stored; deliveries by status: "
            f"{dict(statuses)}; most common errors: {errors or 'none'}); see {procs[-1].log_path}"
        )

    def subscribe(self) -> None:
        """One endpoint per account, subscribed to job.completed, pointing at the events receiver."""
        from event_endpoints.services import endpoint_create

        for seeded in self.accounts:
            endpoint_create(account=seeded.account, url=self.events_url, events=[EVENT_TYPE])
        self.subscribed = True

    def unsubscribe(self) -> None:
        """Every endpoint deleted, with its (all finished) deliveries, through the service, which also tells the
        account it has none left: no account emits events any more, nor looks for endpoints to emit to."""
        from accounts.models import Account
        from event_endpoints.models import EventEndpoint
        from event_endpoints.services import endpoint_delete

        for endpoint in EventEndpoint.objects.select_related("account"):
            endpoint_delete(endpoint)
        if Account.objects.filter(has_event_endpoints=True).exists():
            raise BenchError("accounts without endpoints still say they have some (Account.has_event_endpoints)")
        self.subscribed = False


def stall_until(count: Callable[[], int], done: Callable[[int], bool]) -> int:
    """Polls ``count`` until ``done`` says so, or it has not changed for the delivery bench's STALL_SECONDS."""
    last, changed = -1, time.monotonic()
    while True:
        value = count()
        if done(value):
            return value
        if value != last:
            last, changed = value, time.monotonic()
        elif time.monotonic() - changed > delivery.STALL_SECONDS:
            return value
        time.sleep(POLL_SECONDS)


# --- Throughput: one endpoint against none -----------------------------------------------------------


def throughput_run(d: EventsDelivery, target: str, number: int) -> tuple[DeliveryRun, Events]:
    """The delivery bench's throughput run, each account with its endpoint (``endpoint``) or with none (``none``);
    its events (``d.settled``) are all in before the workers stop."""
    if target == "endpoint":
        d.subscribe()
    try:
        run = delivery.throughput(d, target, number)
    finally:
        d.unsubscribe()
    return run, d.events[-1]


def round_row(run: DeliveryRun, events: Events) -> tuple[Any, ...]:
    jobs = f"{run.arrived}/{run.jobs}", run.duplicates, "{}/{}".format(*run.signatures)
    sent = f"{events.arrived}/{events.expected}", events.early, events.duplicates, "{}/{}".format(*events.signatures)
    drain_ms = events.cpu.get("worker", 0.0) * 1000 / max(run.jobs, 1)  # worker CPU a job while its events drained
    cpu = run.cpu_ms("worker"), drain_ms, run.cpu_ms("postgres")
    return run.target, run.round, run.rate, run.seconds, *jobs, *sent, events.seconds, *cpu, run.busy, run.before


def events_verdict(label: str, all_events: list[Events]) -> None:
    """Each job with an endpoint had exactly one event, stored and arrived once, signed; a job without had none."""
    arrived, expected = sum(e.arrived for e in all_events), sum(e.expected for e in all_events)
    verdict(label, f"{arrived}/{expected}", "all", all(e.ok for e in all_events))
    for e in all_events:
        if not e.ok:
            print(
                f"  {e.jobs} jobs, {e.expected} events expected: {e.stored} stored ({e.one_each} jobs with one, "
                f"{e.stray} stray), {e.arrived} arrived, {e.duplicates} duplicates, {e.requests} requests, "
                "signatures {}/{}".format(*e.signatures)
            )


def throughput(d: EventsDelivery) -> None:
    runs = [throughput_run(d, target, n) for n in range(1, d.args.rounds + 1) for target in TARGETS]
    print()
    table(ROUND_COLUMNS, [round_row(run, events) for run, events in runs])
    print()
    rates = [run.rate for run, _ in runs]
    judge_rounds("endpoint/none jobs/s", list(zip(rates[0::2], rates[1::2], strict=True)), MIN_SHARE_OF_NONE)
    delivery.throughput_verdicts([run for run, _ in runs])
    events_verdict("one event a job, once, signed", [events for _, events in runs])


# --- Latency: from the send to its event's arrival ----------------------------------------------------


def latency(d: EventsDelivery) -> None:
    args = d.args
    log(f"event-endpoints latency: gunicorn and the app worker, {args.rate:g}/s for {args.duration:g} s")
    d.subscribe()
    with gunicorn("gunicorn-event-endpoints", args.port, **d.env) as web, delivery.workers(d, "app") as procs:
        warm_up = [job_id for job_id, _, _ in delivery.paced_load(d, args.warmup)[0]]
        before = delivery.warmed_up(d, procs, warm_up)  # its events in too, the events receiver cleared
        sources = d.sources(procs, gunicorn=web.cpu)
        start = Sample.take(**sources)
        accepted, errors = delivery.paced_load(d, args.duration)
        loaded = Sample.take(**sources)
        ids = [job_id for job_id, _, _ in accepted]
        dump = d.client.wait_for(ids, stall_seconds=delivery.STALL_SECONDS)
        d.settled(procs, ids)
        drained = Sample.take(**sources)
    events = d.events[-1]
    first_job = dump.first_arrivals(ids)
    first_event: dict[str, float] = {}
    for event_id, arrived_at in events.first.items():
        job_id = events.job_of[event_id]
        first_event[job_id] = min(arrived_at, first_event.get(job_id, math.inf))
    to_job = [(first_job[job_id] - sent_at) * 1000 for job_id, sent_at, _ in accepted if job_id in first_job]
    to_event = [(first_event[job_id] - sent_at) * 1000 for job_id, sent_at, _ in accepted if job_id in first_event]
    accept_ms = [(accepted_at - sent_at) * 1000 for _, sent_at, accepted_at in accepted]
    job_signatures = d.signatures(dump, "app")
    achieved = len(ids) / (loaded.at - start.at)
    print(
        f"\nlatency: {args.rate:g} jobs/s for {args.duration:g} s through the API, each account with one endpoint "
        f"subscribed to {EVENT_TYPE} ({achieved:.1f}/s achieved); from the request sent"
    )
    rows = [
        ("job", to_job, f"{len(first_job)}/{len(ids)}", dump.duplicates(ids), job_signatures),
        ("event", to_event, f"{events.arrived}/{events.expected}", events.duplicates, events.signatures),
    ]
    table(LATENCY_COLUMNS, [latency_row(*row) for row in rows])
    cpu = ", ".join(f"{name} {sec / max(len(ids), 1) * 1000:.2f}" for name, sec in drained.cpu_since(start).items())
    print(
        f"  API accept p50 {percentile(accept_ms, 0.5):.1f} ms, p99 {percentile(accept_ms, 0.99):.1f} ms; machine busy "
        f"{loaded.busy_since(start):.0%} (before: {before:.0%}); CPU ms per job and its event: {cpu}"
    )
    last_job, last_event = max(first_job.values(), default=math.nan), max(first_event.values(), default=math.nan)
    print(f"  the last event arrived {last_event - last_job:.2f} s after the last job")
    if errors:
        print(f"  errors: {dict(errors)}")
    if achieved < 0.95 * args.rate:
        print("  note: the client fell behind the requested rate (the API answered too slowly for its threads)")
    print()
    p99 = percentile(to_event, 0.99)
    verdict("p99 sent-to-event-arrival", f"{p99:.1f} ms", f"< {MAX_EVENT_P99_MS:.0f} ms", p99 < MAX_EVENT_P99_MS)
    delivery.every_job_verdict(len(first_job), len(ids) + errors.total(), dump.duplicates(ids), [job_signatures])
    events_verdict("one event a job, once, signed", [events])


def latency_row(
    name: str, milliseconds: list[float], arrived: str, duplicates: int, signatures: tuple[int, int]
) -> tuple[Any, ...]:
    shares = (0.50, 0.95, 0.99)
    spread = *(percentile(milliseconds, share) for share in shares), max(milliseconds, default=math.nan)
    return name, *spread, arrived, duplicates, "{}/{}".format(*signatures)


# --- The subcommand ------------------------------------------------------------------------------------


def options(parser: argparse.ArgumentParser) -> None:
    env = "event_endpoints"
    option(parser, "jobs", 5000, "jobs per throughput run", env=env)
    option(parser, "rounds", 3, "one endpoint then none, this many times; the verdict takes the median", env=env)
    option(parser, "pool", "threads", "worker pool", env=env, choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "worker concurrency", env=env)
    option(parser, "processes", 2, "worker processes side by side (one per core)", env=env)
    option(parser, "rate", 100.0, "latency: API requests a second", env=env)
    option(parser, "duration", 20.0, "latency: seconds of load", env=env)
    option(parser, "warmup", 3.0, "latency: warm-up seconds", env=env)
    option(parser, "port", 8771, "gunicorn's port", env=env)
    option(parser, "receiver-port", 8743, "the jobs' HTTPS receiver's port", env=env)
    option(parser, "events-receiver-port", 8744, "the events' HTTPS receiver's port", env=env)
    option(parser, "parts", "both", "throughput, latency or both", env=env, choices=["both", "throughput", "latency"])


def run(args: argparse.Namespace) -> None:
    parts = ("throughput", "latency") if args.parts == "both" else (args.parts,)
    log(
        f"event-endpoints: {', '.join(parts)}; {args.processes} * --pool {args.pool} --concurrency {args.concurrency}, "
        f"rounds: {args.rounds}"
    )
    make_tls()
    with own_services(args):
        from notifyhub.celery import app as celery_app

        celery_app.set_current()  # the app's publish uses the current Celery app
        api_requests = args.rate * min(60.0, args.warmup + args.duration)
        # Per round: each side's jobs and warm-up jobs (delivery.throughput: 4 per thread, 50 at least).
        direct_jobs = (args.jobs + max(50, 4 * args.concurrency * args.processes)) * len(TARGETS) * args.rounds
        count = max(40, math.ceil(api_requests / REQUESTS_PER_KEY), math.ceil(direct_jobs / delivery.JOBS_PER_ACCOUNT))
        with (
            delivery.started_receiver(args.receiver_port) as (receiver, client),
            delivery.started_receiver(args.events_receiver_port, name="receiver-events") as (events_proc, events),
        ):
            log(f"event-endpoints: seeding {count} Startup accounts")
            accounts = seed_accounts(count, prefix="events-out", secrets=True)
            # What delivery.py's functions read from the arguments beyond ours: no other revision's workers.
            delivery_args = argparse.Namespace(**vars(args), against="")
            env = dict(delivery.APP_WORKER_ENV)
            d = EventsDelivery(delivery_args, env, receiver, client, accounts, "", events_proc, events)
            if "throughput" in parts:
                throughput(d)
            if "latency" in parts:
                latency(d)
