"""unsubscribe: the one-click unsubscribe POST under gunicorn at a steady rate, as mail clients send it.

One account, and the signed links of its emails (docs/suppressions.md, "One-click unsubscribe") for as many
(recipient, topic) pairs as the run posts; a share of the posts repeat a link already posted. bench/README.md says
how to read the report.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import math
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bench.common import (
    PROXY_HEADERS,
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

HELP = "the one-click unsubscribe POST at a steady rate"
DATABASE = "notifyhub_bench_unsubscribe"
MAX_P99_MS = 50.0
# A recipient is on several of an account's topics: each pair of address and topic is a link of its own.
TOPICS = ("weekly-digest", "product-news", "offers", "reminders")
# What a mail client posts (RFC 8058, section 3.2): the form's one field, no cookie, no CSRF token.
ONE_CLICK_HEADERS = {"Content-Type": "application/x-www-form-urlencoded", **PROXY_HEADERS}
COLUMNS = (
    "sent>7|answered 200>14|repeats>9|errors>8|req/s>8.1f|p50 ms>8.1f|p99 ms>8.1f|max ms>8.1f|links>7|stored>8"
    "|lost>6|dup>5|gunicorn ms>13.2f|pg ms>7.2f|redis ms>10.2f|client ms>11.2f|other load>12.0%"
)


def post_order(total: int, repeat_share: float, lag: int, rng: random.Random) -> list[int]:
    """The links posted, in order, as indices: each new link the next index, and about ``repeat_share`` of the posts
    after the first ``lag`` a link first posted at least ``lag`` posts before (a second at the rate, so it is
    unsubscribed already unless the server has fallen that far behind)."""
    order: list[int] = []
    fresh = itertools.count()
    for number in range(total):
        repeat = number >= lag and rng.random() < repeat_share
        order.append(order[rng.randrange(number - lag + 1)] if repeat else next(fresh))
    return order


@dataclass(frozen=True)
class Links:
    """The (recipient, topic) pairs of one account, each with its unsubscribe link's path."""

    account: Any  # accounts.models.Account; Django is imported only once it is set up
    pairs: list[tuple[str, str]]
    paths: list[str]


def links_of(account: Any, count: int, prefix: str) -> Links:
    """``count`` pairs: addresses ``<prefix>N@example.com``, each on every topic in turn, and the path of the URL
    an email to each carries in its ``List-Unsubscribe`` header (its host is PUBLIC_URL's, where the bench's gunicorn
    stands)."""
    from suppressions.unsubscribe import unsubscribe_url

    pairs = [(f"{prefix}{n // len(TOPICS)}@example.com", TOPICS[n % len(TOPICS)]) for n in range(count)]
    paths = [urlsplit(unsubscribe_url(account_id=account.pk, email=email, topic=topic)).path for email, topic in pairs]
    return Links(account, pairs, paths)


def one_click() -> tuple[bytes, bytes]:
    """What a mail client posts, and the answer it must hear."""
    from dashboard.views.unsubscribe import ONE_CLICK_ANSWER
    from suppressions.unsubscribe import ONE_CLICK

    return ONE_CLICK.encode(), ONE_CLICK_ANSWER.encode()


def first_answer(port: int, links: Links, web: Proc) -> None:
    """One unsubscribe first, which must be answered as a mail client expects: a broken server fails loudly here
    instead of as a table of errors."""
    body, expected = one_click()
    answer = one_request(port, "POST", links.paths[0], ONE_CLICK_HEADERS, body)
    if answer.status != 200 or answer.body != expected:
        raise BenchError(f"the unsubscribe POST answered {answer.status}: {answer.body[:300]!r}; see {web.log_path}")


@dataclass(frozen=True)
class Answer:
    repeat: bool  # the link was posted before in the run
    status: int
    # From the moment the request was due, not sent: a stall delays the requests behind it, and that counts.
    latency_ms: float


@dataclass(frozen=True)
class Load:
    order: list[int]  # the links posted, as indices into the run's links
    answers: list[Answer]
    errors: Counter[str]
    seconds: float  # from the first request's due time to the last answer
    cpu_ms: dict[str, float]  # CPU per request of gunicorn, PostgreSQL (every backend), Redis and the bench's client
    other_load: float  # share of all CPUs used by other processes: on a shared machine, what the run competed with

    @property
    def repeats(self) -> int:
        return len(self.order) - len(set(self.order))


def unsubscribe_load(args: argparse.Namespace, links: Links, order: list[int], web: Proc) -> Load:
    """The links of ``order`` posted at ``--rate`` a second, open loop, shared by ``--senders`` threads."""
    body, expected = one_click()
    first_posts = {number: index for index, number in reversed(list(enumerate(order)))}  # a link's first post
    answers: list[Answer] = []  # appended to by every sender thread (list.append is atomic)

    def send(connection: http.client.HTTPConnection, number: int, due: float) -> str:
        connection.request("POST", links.paths[order[number]], body=body, headers=ONE_CLICK_HEADERS)
        response = connection.getresponse()
        answer, answered_at = response.read(), time.monotonic()
        repeat = first_posts[order[number]] != number
        answers.append(Answer(repeat, response.status, (answered_at - due) * 1000))
        # Not retried when it fails: the link counts as lost unless the server stored it anyway.
        if response.status != 200:
            return f"status {response.status}"
        return "" if answer == expected else "200 with another answer"

    sources = {
        "server": web.cpu,
        "postgres": lambda: command_cpu("postgres"),
        "redis": lambda: command_cpu("redis-server"),
        "client": time.process_time,
    }
    before = Sample.take(**sources)
    start, errors = open_loop(args.port, args.rate, len(order), args.senders, send)
    after = Sample.take(**sources)
    cpu = after.cpu_since(before)
    return Load(
        order,
        answers,
        errors,
        seconds=after.at - start,
        cpu_ms={name: spent * 1000 / max(len(order), 1) for name, spent in cpu.items()},
        other_load=max(0.0, after.busy_since(before) - after.share_since(before, sum(cpu.values()))),
    )


@dataclass(frozen=True)
class UnsubscribeRun:
    load: Load
    links: int  # distinct links posted
    stored: int  # of them, those whose suppression exists
    duplicates: int  # rows beyond one per link posted

    @property
    def lost(self) -> int:
        return self.links - self.stored

    def row(self) -> tuple[Any, ...]:
        load = self.load
        answered = sum(answer.status == 200 for answer in load.answers)
        head = len(load.order), answered, load.repeats, load.errors.total(), len(load.answers) / load.seconds
        latencies = [answer.latency_ms for answer in load.answers]
        quantiles = percentile(latencies, 0.50), percentile(latencies, 0.99), max(latencies, default=math.nan)
        rows = self.links, self.stored, self.lost, self.duplicates
        cpu = (load.cpu_ms[name] for name in ("server", "postgres", "redis", "client"))
        return *head, *quantiles, *rows, *cpu, load.other_load


def rows_counted(links: Links, load: Load) -> UnsubscribeRun:
    """The suppressions behind a load, counted once gunicorn has stopped: a request the client gave up on may have
    landed. Each link posted must have left exactly one entry, the recipient's unsubscribe from that topic."""
    from suppressions.models import Suppression, SuppressionReason

    rows = Suppression.objects.filter(account=links.account, reason=SuppressionReason.UNSUBSCRIBED)
    entries = Counter(rows.values_list("email", "topic"))
    posted = [links.pairs[index] for index in set(load.order)]
    stored = sum(entries[pair] > 0 for pair in posted)
    return UnsubscribeRun(load, len(posted), stored, duplicates=sum(entries[pair] for pair in posted) - stored)


def report_unsubscribe(args: argparse.Namespace, run: UnsubscribeRun) -> None:
    load = run.load
    print(f"\nunsubscribe: one-click POSTs at {args.rate:g}/s for {args.duration:g} s, open loop, no cookie")
    table(COLUMNS, [run.row()])
    for repeat, kind in ((False, "first posts"), (True, "repeats")):
        latencies = [answer.latency_ms for answer in load.answers if answer.repeat is repeat]
        p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
        print(f"  {kind}: {len(latencies)}, p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    if load.errors:
        print(f"  errors: {dict(load.errors)}")
    if len(load.answers) / load.seconds < 0.95 * args.rate:
        print("  note: answers came slower than the requested rate (the server fell behind)")
    if load.other_load > 0.10:
        print(f"  note: other processes used {load.other_load:.0%} of the CPUs during the load; re-run")
    print()
    p99 = percentile([answer.latency_ms for answer in load.answers], 0.99)
    verdict("p99 from due time", f"{p99:.1f} ms", f"< {MAX_P99_MS:.0f} ms", p99 < MAX_P99_MS)
    errors = load.errors.total()
    verdict("errors (answers other than 200)", str(errors), "0", errors == 0)
    verdict("links without their suppression", str(run.lost), "0", run.lost == 0)
    verdict("suppressions stored twice", str(run.duplicates), "0", run.duplicates == 0)


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "rate", 100.0, "POSTs a second", env="unsubscribe")
    option(parser, "duration", 20.0, "seconds of load", env="unsubscribe")
    option(parser, "warmup", 3.0, "warm-up seconds, on links of their own", env="unsubscribe")
    option(
        parser,
        "repeats",
        0.2,
        "share of the POSTs after the first second that repeat a link posted a second or more before",
        env="unsubscribe",
    )
    option(parser, "senders", 16, "client threads, each on its own connection", env="unsubscribe")
    option(parser, "port", 8791, "gunicorn's port", env="unsubscribe")


def run(args: argparse.Namespace) -> None:
    log(f"unsubscribe: one-click POSTs at {args.rate:g}/s for {args.duration:g} s, {args.repeats:.0%} repeats")
    rng, lag = random.Random(0), math.ceil(args.rate)  # the same order every run
    order = post_order(round(args.rate * args.duration), args.repeats, lag, rng)
    warmup_order = post_order(round(args.rate * args.warmup), args.repeats, lag, rng)
    with own_services(args):
        (seeded,) = seed_accounts(1, prefix="unsubscribe")
        links, warmup_links = (
            links_of(seeded.account, len(set(each)), prefix)
            for each, prefix in ((order, "reader"), (warmup_order, "warmup"))
        )
        log(f"unsubscribe: {len(links.pairs)} links to post, {len(warmup_links.pairs)} for the warm-up")
        with gunicorn("gunicorn-unsubscribe", args.port, LOG_LEVEL="WARNING") as web:
            first_answer(args.port, warmup_links, web)
            # Warm-up: every worker loads the view and opens its database connection on its first request.
            unsubscribe_load(args, warmup_links, warmup_order, web)
            wait_for_quiet(args.quiet_wait)
            log(f"unsubscribe: {len(order)} POSTs, {args.rate:g}/s for {args.duration:g} s")
            load = unsubscribe_load(args, links, order, web)
        counted = rows_counted(links, load)
    report_unsubscribe(args, counted)
