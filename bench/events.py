"""events: the provider-event receivers under gunicorn: signed SendGrid batches, then Postmark events at a steady rate.

Two accounts, one per provider, with sent emails the events name, and their credentials set through the app's
services; the events come from tests/fakes/events.py. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import math
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from bench.common import (
    API_HEADERS,
    BenchError,
    Proc,
    Sample,
    command_cpu,
    gunicorn,
    log,
    one_request,
    open_loop,
    option,
    own_services,
    percentile,
    seed_accounts,
    table,
    verdict,
    wait_for_quiet,
)
from tests.fakes.events import Delivery as ProviderPost
from tests.fakes.events import PostmarkEvents, SendGridEvents

HELP = "the provider-event receivers: batches and singles"
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
    answer = one_request(port, "POST", path, {**API_HEADERS, **delivery.headers}, delivery.body)
    try:
        envelope = answer.json()
    except ValueError:
        envelope = {"body": answer.body[:300].decode("latin-1")}
    return answer.status, envelope, answer.seconds


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
    """Postmark events at ``--rate`` a second, open loop, shared by ``--senders`` threads."""
    total = round(args.rate * seconds)
    requests = [t.postmark_single() for _ in range(total)]  # built before the clock starts, so the client stays lean
    answers: list[Answer] = []  # appended to by every sender thread (list.append is atomic)

    def send(connection: http.client.HTTPConnection, number: int, due: float) -> str:
        event_id, delivery = requests[number]
        headers = {**API_HEADERS, **delivery.headers}
        connection.request("POST", t.path("postmark"), body=delivery.body, headers=headers)
        response = connection.getresponse()
        body, answered_at = response.read(), time.monotonic()
        counts = json.loads(body)["data"] if response.status == 200 else {}
        answers.append(Answer(event_id, response.status, (answered_at - due) * 1000, counts))
        # Not retried when it fails: the event counts as lost unless the server stored it anyway.
        return "" if response.status == 200 else f"status {response.status}"

    sources = {"server": web.cpu, "postgres": lambda: command_cpu("postgres"), "client": time.process_time}
    before = Sample.take(**sources)
    start, errors = open_loop(t.port, args.rate, total, args.senders, send)
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


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "batches", 5, "SendGrid batches, one after another", env="events")
    option(parser, "batch-size", 1000, "events per SendGrid batch", env="events")
    option(parser, "rate", 200.0, "Postmark: requests a second", env="events")
    option(parser, "duration", 20.0, "Postmark: seconds of load", env="events")
    option(parser, "warmup", 3.0, "Postmark: warm-up seconds, before the batches", env="events")
    option(parser, "senders", 32, "Postmark: client threads, each on its own connection", env="events")
    option(parser, "jobs", 500, "sent emails seeded per provider, which the events name", env="events")
    option(parser, "port", 8771, "gunicorn's port", env="events")


def run(args: argparse.Namespace) -> None:
    log(f"events: {args.batches} SendGrid batches of {args.batch_size}, Postmark at {args.rate:g}/s")
    with own_services(args):
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
    report_events(args, batches, singles)
