"""attachments: emails with a 10 MiB attachment accepted, sent beside webhook jobs, and read back.

gunicorn as production starts it, with one worker (whose memory is then the requests'), takes the emails; the
bench's process accepts one more and sends one under tracemalloc; one worker as the Procfile runs it sends them to a
fake SendGrid (tests/fakes/) in a process of its own, the last ones beside a steady flow of webhook jobs to the
delivery bench's receiver. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import base64
import functools
import io
import json
import logging
import math
import multiprocessing
import os
import sys
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from statistics import median
from typing import Any, TypeVar

from bench.common import (
    API_HEADERS,
    BIN,
    BenchError,
    Exchange,
    Seeded,
    flush_redis,
    gunicorn,
    log,
    make_tls,
    one_request,
    option,
    own_services,
    percentile,
    running,
    seed_accounts,
    sends_through_sendgrid,
    table,
    verdict,
    wait_for_quiet,
)
from bench.delivery import APP_WORKER_ENV, PAYLOAD, STALL_SECONDS, started_receiver
from bench.receiver import ReceiverClient

HELP = "an email with a 10 MiB attachment: its accept, memory, sending beside webhooks, reads"
MIB = 1024 * 1024
EMAIL_PATH = "/api/v1/notifications/email"
JOBS_PATH = "/api/v1/notifications/jobs"
SENDGRID_KEY = "bench-sendgrid-key"
MAX_ACCEPT_P50_S = 1.5
MAX_GROWTH = 4.0  # a process's peak memory may grow by this many attachments
MAX_P99_RATIO = 2.0  # webhook p99 with the email beside, against without
MAX_READ_RATIO = 1.2  # a read of a job with attachments against one without: the same, within this VM's noise
SEND_TIMEOUT = 120.0
MEMORY_COLUMNS = "process<44|measured by<12|before MiB>11|peak MiB>10|growth MiB>12|x attachment>14.2f"
WEBHOOK_COLUMNS = "webhooks<30|jobs>6|p50 ms>9.1f|p99 ms>9.1f|max ms>9.1f|arrived>10|emails sent beside>20"
READ_COLUMNS = "read<8|with ms>9.2f|without ms>12.2f|ratio>8.2f"
T = TypeVar("T")


@dataclass(frozen=True)
class Growth:
    """A process's memory while it worked: MiB before, at the peak, and the growth as a multiple of the attachment."""

    process: str
    measured_by: str
    before: float
    peak: float
    attachment: float

    @property
    def ratio(self) -> float:
        return (self.peak - self.before) / self.attachment

    def row(self) -> tuple[Any, ...]:
        before = f"{self.before:.1f}" if self.before else "-"
        return self.process, self.measured_by, before, f"{self.peak:.1f}", f"{self.peak - self.before:.1f}", self.ratio


def rss_mib(pid: int) -> tuple[float, float]:
    """The process's resident set and its high-water mark since the last reset (VmRSS, VmHWM), in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    rss, peak = (int(fields[name].split()[0]) / 1024 for name in ("VmRSS", "VmHWM"))
    return rss, peak


@dataclass(frozen=True)
class RssGrowths:
    """Process ``pid``'s RSS around each of a series of tasks: the worst task's growth, and what the process kept."""

    worst: Growth
    first_before: float  # MiB before the first task
    last_after: float  # MiB after the last


def rss_growths(process: str, pid: int, attachment: float, tasks: list[Callable[[], T]]) -> tuple[RssGrowths, list[T]]:
    """Runs the tasks one after another; for each, process ``pid``'s RSS before it and its peak while it ran (the
    high-water mark reset first: proc(5), clear_refs). The growth of one task is what it costs; over the series the
    allocator keeps some of what the tasks freed, which the RSS after the last shows."""
    results, growths = [], []
    for task in tasks:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        before, _ = rss_mib(pid)
        results.append(task())
        growths.append(Growth(process, "RSS", before, rss_mib(pid)[1], attachment))
    worst = max(growths, key=lambda growth: growth.ratio)
    return RssGrowths(worst, growths[0].before, rss_mib(pid)[0]), results


def only_worker(master: int) -> int:
    """The one worker process of the gunicorn ``master``, once forked (the master listens first)."""
    deadline = time.monotonic() + 30
    while not (children := Path(f"/proc/{master}/task/{master}/children").read_text().split()):
        if time.monotonic() > deadline:
            raise BenchError("gunicorn forked no worker within 30 s; see var/bench/gunicorn-attachments.log")
        time.sleep(0.1)
    if len(children) != 1:
        raise BenchError(f"gunicorn has {len(children)} workers; the bench runs it with one (WEB_CONCURRENCY=1)")
    return int(children[0])


def traced_peak(work: Callable[[], T]) -> tuple[float, T]:
    """``work``'s result and the peak of what Python allocated while it ran (tracemalloc), in MiB."""
    tracemalloc.start()
    try:
        result = work()
        return tracemalloc.get_traced_memory()[1] / MIB, result
    finally:
        tracemalloc.stop()


def email_body(content: str | None) -> bytes:
    """An email send; with ``content`` (base64), one attachment of it."""
    body: dict[str, Any] = {"to": "user@example.com", "subject": "Your report", "body": "<p>Attached.</p>"}
    if content is not None:
        body["attachments"] = [{"filename": "report.pdf", "content": content, "contentType": "application/pdf"}]
    return json.dumps(body).encode()


def accepted(exchange: Exchange) -> str:
    if exchange.status != 202:
        raise BenchError(f"an email send was answered {exchange.status}: {exchange.body[:300]!r}")
    return str(exchange.json()["data"]["jobId"])


def send_email(port: int, seeded: Seeded, body: bytes) -> Exchange:
    return one_request(port, "POST", EMAIL_PATH, {**API_HEADERS, "X-API-Key": seeded.api_key}, body)


@dataclass(frozen=True)
class Accepts:
    seconds: list[float]
    web: RssGrowths
    job_ids: list[str]
    reads: dict[str, tuple[float, float]]  # status, list -> median ms with attachments, without


def read_medians(port: int, rounds: int, attached: tuple[Seeded, str], plain: tuple[Seeded, str]) -> dict[str, Any]:
    """GET the job's status and the jobs list, as the account with attachments and as the one without, alternating
    round by round; the medians in milliseconds."""
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(rounds):
        for side, (seeded, job_id) in enumerate((attached, plain)):
            headers = {**API_HEADERS, "X-API-Key": seeded.api_key}
            for read, path in (("status", f"{JOBS_PATH}/{job_id}"), ("list", JOBS_PATH)):
                exchange = one_request(port, "GET", path, headers)
                if exchange.status != 200:
                    raise BenchError(f"GET {path} was answered {exchange.status}: {exchange.body[:300]!r}")
                times.setdefault((read, side), []).append(exchange.seconds * 1000)
    return {read: (median(times[read, 0]), median(times[read, 1])) for read in ("status", "list")}


def accept_phase(args: argparse.Namespace, attached: Seeded, plain: Seeded, content: str) -> Accepts:
    """The emails through gunicorn, one at a time, with no worker running (their tasks wait in Redis), then the
    reads. Each account gets as many jobs: the lists compare like with like."""
    log(f"attachments: gunicorn, {args.emails} emails with a {args.attachment_mib} MiB attachment")
    with gunicorn("gunicorn-attachments", args.port, WEB_CONCURRENCY="1", LOG_LEVEL="WARNING") as web:
        worker = only_worker(web.process.pid)
        plain_ids = [accepted(send_email(args.port, plain, email_body(None))) for _ in range(args.emails + 1)]
        accepted(send_email(args.port, attached, email_body("UEsDBA==")))  # warm-up: the attachment's code imported
        wait_for_quiet(args.quiet_wait)
        body = email_body(content)
        web_growth, exchanges = rss_growths(
            f"web: gunicorn worker, worst of {args.emails} accepts",
            worker,
            args.attachment_mib,
            [lambda: send_email(args.port, attached, body)] * args.emails,
        )
        job_ids = [accepted(exchange) for exchange in exchanges]
        log(f"attachments: {args.reads} rounds of reads")
        reads = read_medians(args.port, args.reads, (attached, job_ids[0]), (plain, plain_ids[0]))
    return Accepts([exchange.seconds for exchange in exchanges], web_growth, job_ids, reads)


def wsgi_accept(attached: Seeded, body: bytes) -> str:
    """An email send through the app's WSGI application, as gunicorn calls it; the job's id. Its input gives each
    read bytes of their own, as a socket does: the request's one copy of the body, which the peak counts."""
    from notifyhub.wsgi import application

    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": EMAIL_PATH,
        "QUERY_STRING": "",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_X_FORWARDED_PROTO": "https",
        "HTTP_X_API_KEY": attached.api_key,
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BufferedReader(io.BytesIO(body)),
        "wsgi.errors": sys.stderr,
    }
    statuses: list[str] = []
    answer = b"".join(application(environ, lambda status, _headers, *_: statuses.append(status)))
    if not statuses[0].startswith("202"):
        raise BenchError(f"the in-process email send was answered {statuses[0]}: {answer[:300]!r}")
    return str(json.loads(answer)["data"]["jobId"])


def traced_accept(attached: Seeded, content: str) -> tuple[float, str]:
    """One accept in the bench's process, through the WSGI application: tracemalloc's peak in MiB, and the job."""
    logging.disable(logging.INFO)  # the app's line for each request: the gunicorn run's are off too
    wsgi_accept(attached, email_body("UEsDBA=="))  # warm-up: imports, caches
    body = email_body(content)
    return traced_peak(lambda: wsgi_accept(attached, body))


def _traced_delivery(job_id: str, out: Connection) -> None:
    """In a forked child, so the fake provider's threads (left in the parent) add nothing to the peak."""
    from notifications.delivery.email import deliver_email
    from notifications.models import Job

    job = Job.objects.get(id=job_id)
    peak, outcome = traced_peak(lambda: deliver_email(job, attempt=1))
    out.send((peak, outcome.error_message if not outcome.delivered else None))


def traced_delivery(job_id: str) -> float:
    """tracemalloc's peak in MiB of one deliver_email of the job to the fake provider."""
    from django.db import connections

    connections.close_all()  # the child opens its own
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_traced_delivery, args=(job_id, sending))
    child.start()
    try:
        if not receiving.poll(SEND_TIMEOUT):
            raise BenchError(f"the in-process delivery of {job_id} did not finish within {SEND_TIMEOUT:.0f} s")
        peak, error = receiving.recv()
    finally:
        child.join(5)
    if error:
        raise BenchError(f"the in-process delivery of {job_id} failed: {error}")
    return float(peak)


def sent(job_id: str) -> float:
    """Queues the job's task as the API does, waits for its delivery; returns the seconds it took."""
    from notifications.engine.queue import job_enqueue
    from notifications.models import Job

    started = time.monotonic()
    job_enqueue(job_id=uuid.UUID(job_id), priority=5)
    while time.monotonic() - started < SEND_TIMEOUT:
        job = Job.objects.only("status", "error_message").get(id=job_id)
        if job.status == "completed":
            return time.monotonic() - started
        if job.status == "failed":
            raise BenchError(f"email job {job_id} failed: {job.error_message}")
        time.sleep(0.02)
    raise BenchError(f"email job {job_id} was not sent within {SEND_TIMEOUT:.0f} s")


@dataclass(frozen=True)
class Flow:
    latencies: list[float]  # ms from each webhook job's publish to its arrival
    jobs: int
    emails_beside: int

    def row(self, label: str) -> tuple[Any, ...]:
        p50, p99 = (percentile(self.latencies, share) for share in (0.5, 0.99))
        arrived = f"{len(self.latencies)}/{self.jobs}"
        return label, self.jobs, p50, p99, max(self.latencies, default=math.nan), arrived, self.emails_beside


@contextmanager
def sending_beside(job_ids: list[str]) -> Iterator[list[float]]:
    """Sends the email jobs one after another in a thread of the bench until the ``with`` ends; yields the list the
    seconds of those sent are appended to."""
    from django.db import connection

    seconds: list[float] = []
    done = threading.Event()

    def send_each() -> None:
        try:
            for job_id in job_ids:
                if done.is_set():
                    break
                seconds.append(sent(job_id))
        finally:
            connection.close()

    thread = threading.Thread(target=send_each, daemon=True)
    thread.start()
    try:
        yield seconds
    finally:
        done.set()
        thread.join(SEND_TIMEOUT)


def webhook_flow(args: argparse.Namespace, hooks: Seeded, client: ReceiverClient, url: str) -> Flow:
    """Webhook jobs stored as the API stores them, at ``--rate`` a second for ``--duration`` seconds; the time from
    each one's publish to its arrival at the receiver (one clock: time.monotonic)."""
    from notifications.services import webhook_job_create

    client.reset()
    published: list[tuple[str, float]] = []
    start = time.monotonic()
    for number in range(round(args.rate * args.duration)):
        time.sleep(max(0.0, start + number / args.rate - time.monotonic()))
        job = webhook_job_create(account=hooks.account, url=url, payload=PAYLOAD)
        published.append((str(job.id), time.monotonic()))
    ids = [job_id for job_id, _ in published]
    first = client.wait_for(ids, stall_seconds=STALL_SECONDS).first_arrivals(ids)
    latencies = [(first[job_id] - at) * 1000 for job_id, at in published if job_id in first]
    return Flow(latencies, len(ids), 0)


@dataclass(frozen=True)
class Sends:
    worker: RssGrowths
    send_seconds: list[float]
    alone: Flow
    beside: Flow


def worker_phase(
    args: argparse.Namespace, job_ids: list[str], hooks: Seeded, client: ReceiverClient, url: str
) -> Sends:
    """One worker: the first ``--sends`` emails one at a time (its memory), then webhook jobs alone and with the
    other emails sent one after another beside them."""
    log(f"attachments: a worker sends {args.sends} emails, then webhooks at {args.rate:g}/s alone and beside the rest")
    command = [str(BIN / "celery"), "--app", "notifyhub", "worker", "--pool", "threads", "--concurrency", "8"]
    with running("worker-attachments", [*command, "--loglevel", "WARNING"], env=APP_WORKER_ENV) as worker:
        time.sleep(3)
        worker.check_alive()
        warm = argparse.Namespace(rate=args.rate, duration=1.0)  # the threads import lazily and open connections
        webhook_flow(warm, hooks, client, url)
        wait_for_quiet(args.quiet_wait)
        first, rest = job_ids[: args.sends], job_ids[args.sends :]
        growth, send_seconds = rss_growths(
            f"worker: celery threads x8, worst of {len(first)} sends",
            worker.process.pid,
            args.attachment_mib,
            [functools.partial(sent, job_id) for job_id in first],
        )
        alone = webhook_flow(args, hooks, client, url)
        with sending_beside(rest) as beside_seconds:
            beside = webhook_flow(args, hooks, client, url)
        worker.check_alive()
    beside = Flow(beside.latencies, beside.jobs, len(beside_seconds))
    return Sends(growth, send_seconds + beside_seconds, alone, beside)


def report(args: argparse.Namespace, accepts: Accepts, sends: Sends, traced: list[Growth]) -> None:
    size = args.attachment_mib
    accept_p50, accept_max = median(accepts.seconds), max(accepts.seconds)
    print(f"\nattachments: {args.emails} emails with a {size} MiB attachment, one at a time")
    print(
        f"  accept through gunicorn (one sync worker): p50 {accept_p50:.2f} s, max {accept_max:.2f} s; "
        f"sent by the worker: p50 {median(sends.send_seconds):.2f} s, max {max(sends.send_seconds):.2f} s "
        f"({len(sends.send_seconds)} emails)\n"
    )
    memory = [accepts.web.worst, *traced[:1], sends.worker.worst, *traced[1:]]
    table(MEMORY_COLUMNS, [growth.row() for growth in memory])
    for name, series in (("web", accepts.web), ("worker", sends.worker)):
        kept = series.last_after - series.first_before
        print(
            f"  {name} RSS before the first: {series.first_before:.1f} MiB, after the last: "
            f"{series.last_after:.1f} MiB ({kept:+.1f}: what the allocator kept of what was freed)"
        )
    print()
    table(WEBHOOK_COLUMNS, [sends.alone.row("alone"), sends.beside.row(f"beside {size} MiB emails")])
    print()
    table(READ_COLUMNS, [(read, *times, times[0] / times[1]) for read, times in accepts.reads.items()])
    print(f"  medians of {args.reads} rounds, one job with a {size} MiB attachment against a plain email's\n")
    verdict("accept p50", f"{accept_p50:.2f} s", f"< {MAX_ACCEPT_P50_S} s", accept_p50 < MAX_ACCEPT_P50_S)
    for growth in memory:
        label = f"{growth.process.split(':')[0]} peak growth ({growth.measured_by})"
        verdict(label, f"{growth.ratio:.2f}x", f"<= {MAX_GROWTH:.0f}x", growth.ratio <= MAX_GROWTH)
    ratio, most = percentile(sends.beside.latencies, 0.99) / percentile(sends.alone.latencies, 0.99), MAX_P99_RATIO
    verdict("webhook p99 beside / alone", f"{ratio:.2f}x", f"<= {most:.0f}x", ratio <= most)
    every = all(len(flow.latencies) == flow.jobs for flow in (sends.alone, sends.beside))
    verdict("every webhook arrived", "yes" if every else "no", "all", every)
    for read, (with_ms, without_ms) in accepts.reads.items():
        ratio = with_ms / without_ms
        verdict(f"{read} read, with / without", f"{ratio:.2f}x", f"<= {MAX_READ_RATIO}x", ratio <= MAX_READ_RATIO)
    if sends.beside.emails_beside < 1 or len(sends.send_seconds) < args.emails:
        print("  note: the emails beside ran out before the webhooks ended; raise --emails for a longer overlap")


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "emails", 10, "emails with an attachment accepted through gunicorn", env="attachments")
    option(parser, "sends", 3, "of them sent one at a time for the worker's memory; the rest beside", env="attachments")
    option(parser, "attachment-mib", 10, "the attachment's size (at most 10)", env="attachments")
    option(parser, "rate", 50.0, "webhook jobs a second", env="attachments")
    option(parser, "duration", 10.0, "seconds of webhook jobs, alone and beside", env="attachments")
    option(parser, "reads", 200, "rounds of status and list reads", env="attachments")
    option(parser, "port", 8771, "gunicorn's port", env="attachments")
    option(parser, "receiver-port", 8743, "the HTTPS receiver's port", env="attachments")


def _serve_sendgrid(out: Connection, stop: EventType) -> None:
    from tests.fakes.providers import FakeSendGrid

    with FakeSendGrid() as sendgrid:
        sendgrid.accept_key(SENDGRID_KEY)
        out.send(sendgrid.url)
        stop.wait()


@contextmanager
def sendgrid_of_its_own() -> Iterator[str]:
    """The fake SendGrid's address, served by a process of its own: its parse of each 13 MiB request holds that
    process's GIL for a tenth of a second, which in the bench's would delay the webhook jobs it publishes and times
    (a real provider parses on its own machines)."""
    from django.db import connections

    connections.close_all()  # the child must not share this process's connections
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    stop = context.Event()
    child = context.Process(target=_serve_sendgrid, args=(sending, stop), daemon=True)
    child.start()
    try:
        if not receiving.poll(10):
            raise BenchError("the fake SendGrid did not start within 10 s")
        yield receiving.recv()
    finally:
        stop.set()
        child.join(5)


def run(args: argparse.Namespace) -> None:
    make_tls()
    with own_services(args):
        from django.conf import settings

        with sendgrid_of_its_own() as sendgrid_url, started_receiver(args.receiver_port) as (_, client):
            # The worker's and this process's deliveries go to the fake.
            os.environ["SENDGRID_API_URL"] = settings.SENDGRID_API_URL = sendgrid_url
            attached, plain, hooks = (
                seed_accounts(1, prefix=prefix, secrets=True, rate_limit=100_000)[0]
                for prefix in ("attached", "plain", "hooks")
            )
            for seeded in (attached, plain):
                sends_through_sendgrid(seeded.account, SENDGRID_KEY)
            content = base64.b64encode(os.urandom(args.attachment_mib * MIB)).decode()
            accepts = accept_phase(args, attached, plain, content)
            accept_peak, traced_job = traced_accept(attached, content)
            flush_redis(args.redis_url)  # the accepted jobs' tasks: the worker is given them one at a time
            url = f"https://127.0.0.1:{args.receiver_port}/hooks/bench"
            sends = worker_phase(args, accepts.job_ids, hooks, client, url)
            deliver_peak = traced_delivery(traced_job)
    traced = [
        Growth("web: one accept, in-process", "tracemalloc", 0.0, accept_peak, args.attachment_mib),
        Growth("worker: one deliver_email, in-process", "tracemalloc", 0.0, deliver_peak, args.attachment_mib),
    ]
    report(args, accepts, sends, traced)
