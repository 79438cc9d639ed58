"""trace-instructions: what traces add a webhook send's accept and a webhook delivery, counted by callgrind in one
process, traces on against off (``--against``: beside another revision's).

The throughput bench (``traces``) needs a quiet machine; an instruction count does not move with the machine's other
load. For each side (this code, or ``--against``'s, each on a database of its own migrated by its code), traces off
then on (``OTEL_EXPORTER_OTLP_ENDPOINT`` set to the OTLP/HTTP receiver of tests/fakes/otlp.py in this process), one
process runs under callgrind with its counting off. It loads ``notifyhub.wsgi`` as gunicorn's worker does (Django set
up, then ``tracing_start`` before any database connection opens, so psycopg's instrumentation sees it), makes an
account with an API key and a signing secret, and makes ``--warmup`` webhook sends through ``application`` (WSGI
environs with the key, to the delivery bench's HTTPS receiver) and delivers their jobs
(``notifications.tasks.deliver_job.apply``, as a worker's thread runs the task). Then, counting on
(``callgrind_control -i on``): ``--sends`` more sends, the tracer provider's ``force_flush`` (so the exporter thread's
encoding and posting of their spans are counted, callgrind counting every thread), counting off and a dump; then the
same for the deliveries of those sends' jobs. Printed: instructions a send and a delivery, off and on, and what traces
add to each.

The cyclic GC's full collections fall in a counted window or not (half a million instructions a delivery when one
does): after the warm-up every object is moved to the permanent generation (``gc.freeze()``), so a full collection
counted walks only what the window made; the young generations' collections, which grow with what a span allocates,
are counted as they fall. Copies of one tree at paths of other lengths differ by up to 0.5%: read ``--against`` with
that in mind. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.accept import ACCEPT_PATH
from bench.common import BIN, ROOT, VAR_DIR, BenchError, log, make_tls, option, own_services, revision_tree, table
from bench.delivery import APP_WORKER_ENV, PAYLOAD, started_receiver
from bench.instructions import Side, side_database_url, side_migrate
from tests.fakes.otlp import OtlpReceiver

HELP = "instructions a webhook send and a delivery cost with traces on against off, in one process (valgrind)"
DATABASE = "notifyhub_bench_trace_instructions"
# What the counted process runs, from its side's tree (only what a revision since traces came has): see the docstring.
COUNT = """
import gc, io, json, os, subprocess, sys
from notifyhub.wsgi import application  # Django set up, then tracing_start: before any connection opens
from accounts.services import account_create, account_set_monthly_limit, account_set_rate_limit
from accounts.services import signing_secret_generate
from notifications.models import Job, JobStatus
from notifications.tasks import deliver_job

account, key = account_create(email=f"{os.environ['BENCH_LABEL']}@bench.example", plan="startup")
account_set_monthly_limit(account=account, limit=100_000_000)
account_set_rate_limit(account=account, rate=1_000_000)
signing_secret_generate(account=account)
fields, path = json.loads(os.environ["BENCH_BODY"]), os.environ["BENCH_PATH"]
answers = []
def start_response(status, headers, exc_info=None):
    answers.append(status)
def send(number):
    body = json.dumps({**fields, "idempotencyKey": f"trace-{number}"}).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "", "SCRIPT_NAME": "",
        "SERVER_NAME": "localhost", "SERVER_PORT": "443", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "51234", "HTTP_HOST": "localhost",
        "HTTP_USER_AGENT": "trace-instructions", "HTTP_X_API_KEY": key, "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "https", "wsgi.version": (1, 0), "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    response = application(environ, start_response)
    answer = b"".join(response)
    response.close()
    assert answers.pop().startswith("202"), answer[:300]
    return json.loads(answer)["data"]["jobId"]
def sends(first, count):
    return [send(number) for number in range(first, first + count)]
def deliveries(jobs):
    for job in jobs:
        deliver_job.apply(args=[job])
def delivered(jobs):
    left = Job.objects.filter(id__in=jobs).exclude(status=JobStatus.COMPLETED).count()
    assert not left, f"{left} of {len(jobs)} jobs not delivered"
def flush():
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry import trace
        trace.get_tracer_provider().force_flush()
def counting(*arguments):
    subprocess.run(["callgrind_control", *arguments, str(os.getpid())], check=True, capture_output=True)
def counted(work):
    counting("-i", "on")
    work()
    flush()
    counting("-i", "off")
    counting("-d")
warmup, count = int(os.environ["BENCH_WARMUP"]), int(os.environ["BENCH_COUNT"])
warmed = sends(0, warmup)
deliveries(warmed)
delivered(warmed)
flush()
gc.collect()
gc.freeze()
jobs = []
counted(lambda: jobs.extend(sends(warmup, count)))
counted(lambda: deliveries(jobs))
delivered(jobs)
"""
TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)
COLUMNS = "side<8|revision<12|traces<7|a send>14,.0f|a delivery>14,.0f"


@dataclass(frozen=True)
class Count:
    side: Side
    revision: str
    traced: bool
    per_send: float
    per_delivery: float


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "against", "", "a git revision to count beside this code (none: this code alone)", env="trace")
    option(parser, "count", 300, "sends, then deliveries of their jobs, counted after the warm-up", env="trace")
    option(parser, "warmup", 100, "sends and deliveries before the counting", env="trace")
    option(parser, "receiver-port", 8744, "the delivery bench's HTTPS receiver's port", env="trace")


def run(args: argparse.Namespace) -> None:
    if shutil.which("valgrind") is None:
        raise BenchError("valgrind is not installed; on Debian/Ubuntu: apt-get install valgrind")
    log(f"trace-instructions: {args.count} sends and deliveries counted after {args.warmup}, traces off then on")
    make_tls()
    counts: list[Count] = []
    with own_services(args), OtlpReceiver(keep=False) as collector, started_receiver(args.receiver_port):
        sides = [Side("after", ROOT, args.database_url)]
        if args.against:
            sides.append(Side("before", revision_tree(args.against), side_database_url(args, "before")))
            side_migrate(sides[-1])
        for side in sides:
            for traced in (False, True):
                counts.append(_count(args, side, collector.endpoint if traced else ""))
        spans = collector.received
    table(COLUMNS, [(c.side.name, c.revision, "on" if c.traced else "off", c.per_send, c.per_delivery) for c in counts])
    for off, on in zip(counts[0::2], counts[1::2], strict=True):
        print(
            f"  {off.side.name}: traces add {on.per_send - off.per_send:,.0f} instructions a send "
            f"(off/on {off.per_send / on.per_send:.1%}), {on.per_delivery - off.per_delivery:,.0f} a delivery "
            f"(off/on {off.per_delivery / on.per_delivery:.1%})"
        )
    traced_runs = len(counts) // 2
    jobs = traced_runs * (args.count + args.warmup)
    print(f"  spans received, warm-ups included: {spans / jobs:.1f} a send and its delivery")


def _count(args: argparse.Namespace, side: Side, endpoint: str) -> Count:
    """One process of ``side``'s code under callgrind, traces on when ``endpoint`` is given."""
    url = f"https://127.0.0.1:{args.receiver_port}/hooks/bench"
    env = {
        **os.environ,
        **APP_WORKER_ENV,
        "DATABASE_URL": side.database_url,
        "LOG_LEVEL": "WARNING",
        "PYTHONHASHSEED": "0",  # dict and set layouts, and so their work, alike from run to run
        "BENCH_PATH": ACCEPT_PATH,
        "BENCH_BODY": json.dumps({"url": url, "payload": PAYLOAD}),
        "BENCH_WARMUP": str(args.warmup),
        "BENCH_COUNT": str(args.count),
    }
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    label = env["BENCH_LABEL"] = f"{side.name}-{'on' if endpoint else 'off'}"
    log(f"trace-instructions: {label}: under callgrind (minutes)")
    out = VAR_DIR / f"callgrind-trace-{label}.out"
    for old in out.parent.glob(out.name + "*"):
        old.unlink()
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    done = subprocess.run(
        [*command, str(BIN / "python"), "-c", COUNT], cwd=side.tree, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise BenchError(f"{label}: the counted run failed: {done.stderr[-1500:]}")
    sends, deliveries = (_totals(Path(f"{out}.{number}")) for number in (1, 2))
    log(f"trace-instructions: {label}: the counts' files, for callgrind_annotate: {out}.1 (sends), {out}.2")
    revision = args.against if side.tree != ROOT else "this code"
    return Count(side, revision, bool(endpoint), sends / args.count, deliveries / args.count)


def _totals(dump: Path) -> int:
    found = TOTALS.search(dump.read_text()) if dump.exists() else None
    if found is None:
        raise BenchError(f"no count in {dump}")
    return int(found.group(1))
