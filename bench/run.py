"""NotifyHub benchmarks; bench/README.md says what each measures and how to read it.

  accept    POST /api/v1/notifications/webhook under gunicorn, app against its floor, loaded with wrk
  delivery  webhook deliveries/s of the Celery worker against its floor; latency at a steady rate through the API
  email     an email job through a fake provider against a webhook job, one at a time
  events    the provider-event receivers under gunicorn: signed SendGrid batches, then Postmark events at a steady rate
  event-endpoints  jobs/s with an event endpoint per account against none; job events' latency at a steady rate
  dashboard what an account holder reads under gunicorn, with a million jobs of their own: GETs one at a time
  purge     manage.py purgejobs deleting a million finished jobs while sends go on at a steady rate
  scale     deliveries/s with 1, 2 and 3 worker processes and the accept path, directly and through PgBouncer
  suppressions  the suppression check's lookup with a million addresses on one account's list
  scheduled  scheduled sends: a burst due at one second, to arrival; the dispatcher's tick with a day of them waiting
  batches   POST /api/v1/notifications/webhook/batch against single sends under gunicorn: jobs accepted a second
  attachments  emails with a 10 MiB attachment: accept time, web and worker memory, webhooks beside, reads
  templates  an email send with a stored template against a plain one under gunicorn; the render alone in one process
  unsubscribe  the one-click unsubscribe POST under gunicorn at a steady rate, repeats among them; each link stored once
  instructions  the instructions one accepted send costs the web process (valgrind), this code against a revision
  messages  a message to an app's 10 endpoints against a single webhook send under gunicorn: the time each accepts in
  rate-limit  an app's endpoint limited to 10/s beside an unlimited one: its pace, the other's throughput against alone
  message-delivery  a message's deliveries to an app's 10 endpoints against single webhook jobs: deliveries/s
  customer-webhooks-delete  an endpoint's and an app's delete with 20,000 deliveries: time and memory
  traces    accept and webhook delivery with traces on, to a local OTLP receiver, against traces off
  trace-instructions  what traces add a webhook send and a delivery, counted by valgrind in one process
  all       the twenty-one in turn (the default)

They print numbers and verdicts and exit 0 whether or not a target is met; 1 means a benchmark could not run.
Every option defaults to an environment variable, named in its help.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the project is not on the path

from bench import (
    accept,
    attachments,
    batches,
    dashboard,
    deletes,
    delivery,
    emails,
    events,
    events_out,
    instructions,
    message_delivery,
    messages,
    paced,
    purge,
    scale,
    scheduled,
    suppressions,
    templates,
    trace_instructions,
    traces,
    unsubscribe,
)
from bench.common import bench_main, option

# Each bench's module: HELP (its line in --help), options(parser) and run(args), and optionally DATABASE (the name of
# its default database, when not the common one). `all` runs them in this order. The email bench is emails.py: run as
# a script, bench/ is on the path, where email.py would hide the standard library's email package.
BENCHES = {
    "accept": accept,
    "delivery": delivery,
    "email": emails,
    "events": events,
    "event-endpoints": events_out,
    "dashboard": dashboard,
    "purge": purge,
    "scale": scale,
    "suppressions": suppressions,
    "scheduled": scheduled,
    "batches": batches,
    "attachments": attachments,
    "templates": templates,
    "unsubscribe": unsubscribe,
    "instructions": instructions,
    "messages": messages,
    "rate-limit": paced,
    "message-delivery": message_delivery,
    "customer-webhooks-delete": deletes,
    "traces": traces,
    "trace-instructions": trace_instructions,
}
DATABASE = "notifyhub_bench"


def common_options(database: str = DATABASE) -> argparse.ArgumentParser:
    """The options every subcommand takes; ``database``: the default database's name."""
    common = argparse.ArgumentParser(add_help=False)
    option(common, "database-url", f"postgres://postgres@127.0.0.1:5432/{database}", "recreated on every run")
    option(common, "redis-url", "redis://127.0.0.1:6379/14", "flushed at start and end")
    option(common, "quiet-wait", 60.0, "before each measured run, wait up to this long for other work to stop")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="{" + ",".join([*BENCHES, "all"]) + "}")
    for name, bench in BENCHES.items():
        # A parent of its own each: argparse shares a parent's options, defaults included, with every child.
        common = common_options(getattr(bench, "DATABASE", DATABASE))
        bench.options(commands.add_parser(name, parents=[common], help=bench.HELP))
    commands.add_parser("all", parents=[common_options()], help="the twenty-one in turn (the default)")
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv or ["all"])
    if args.command != "all":
        return bench_main(lambda: BENCHES[args.command].run(args))
    common = ["--redis-url", args.redis_url, "--quiet-wait", str(args.quiet_wait)]
    if args.database_url != common_options().get_default("database_url"):
        common += ["--database-url", args.database_url]  # given: every bench's; else each its own default
    for name, bench in BENCHES.items():
        status = bench_main(lambda bench=bench, name=name: bench.run(parser.parse_args([name, *common])))
        if status:
            return status
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
