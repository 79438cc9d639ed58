"""email: an email job through a fake SendGrid against a webhook job, one at a time.

One worker as the Procfile runs it; the fake provider and the HTTPS receiver of tests/fakes/ run in the bench's
process. With ``--against``, another revision's worker runs the same jobs, rounds alternating. bench/README.md says
how to read the report.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median
from typing import Any

from bench.common import (
    BIN,
    MIN_SHARE_OF_BEFORE,
    ROOT,
    TLS_DIR,
    BenchError,
    Sample,
    judge_rounds,
    log,
    make_tls,
    option,
    own_services,
    percentile,
    revision_tree,
    running,
    seed_accounts,
    sends_through_sendgrid,
    table,
    verdict,
    wait_for_quiet,
)

HELP = "an email job against a webhook job"
MAX_EMAIL_RATIO = 2.0
EMAIL_COLUMNS = "path<8|p50>8.1f|p90>8.1f|max>8.1f|pickup p50>12.1f|attempt p50>13.1f"
EMAIL_ROUND_COLUMNS = (
    "target<8|#>3|emails/s>10.1f|email p50>11.1f|attempt p50>13.1f|webhook p50>13.1f|wkr ms/pair>13.2f"
)
# One job's times in milliseconds: accept to delivered, pickup (accept to claim), attempt (claim to delivered).
Timing = tuple[float, float, float]


@dataclass(frozen=True)
class EmailBench:
    args: argparse.Namespace
    env: dict[str, str]  # what the worker gets on top of the bench's environment
    create: dict[str, Callable[[], Any]]  # job type -> makes one job through the service the API calls


@dataclass(frozen=True)
class EmailRun:
    target: str
    round: int
    timings: dict[str, list[Timing]]  # per job type, in the order they ran
    worker_cpu: float  # CPU seconds of the worker over the measured jobs

    def p50(self, name: str, column: int = 0) -> float:
        return median(timing[column] for timing in self.timings[name])

    @property
    def emails_per_second(self) -> float:
        """Email jobs a second, one at a time: the inverse of the median accept-to-delivered time."""
        return 1000 / self.p50("email")

    def row(self) -> tuple[Any, ...]:
        cpu_per_pair = self.worker_cpu * 1000 / len(self.timings["email"])
        head = self.target, self.round, self.emails_per_second, self.p50("email"), self.p50("email", 2)
        return *head, self.p50("webhook"), cpu_per_pair


def job_timing(create: Callable[[], Any]) -> Timing:
    """Creates one job and waits for it."""
    from notifications.models import Job

    job_id, deadline = create().id, time.monotonic() + 30
    while time.monotonic() < deadline:
        job = Job.objects.only("status", "created_at", "started_at", "completed_at", "error_message").get(id=job_id)
        if job.status == "completed":
            total, pickup = (
                (end - job.created_at).total_seconds() * 1000 for end in (job.completed_at, job.started_at)
            )
            return total, pickup, total - pickup
        if job.status == "failed":
            raise BenchError(f"{job.type} job {job_id} failed: {job.error_message}")
        time.sleep(0.002)
    raise BenchError(f"job {job_id} did not complete within 30 s")


def email_run(b: EmailBench, target: str, number: int) -> EmailRun:
    """One worker as the Procfile runs it, of this code or of ``--against``'s revision: a warm-up, then the jobs of
    each type alternating, each waited for before the next."""
    log(f"email: {target} worker, round {number}")
    command = [str(BIN / "celery"), "--app", "notifyhub", "worker", "--pool", "threads", "--concurrency", "8"]
    tree = revision_tree(b.args.against) if target == "before" else ROOT
    timings: dict[str, list[Timing]] = {name: [] for name in b.create}
    with running(f"worker-email-{target}", [*command, "--loglevel", "WARNING"], env=b.env, cwd=tree) as worker:
        time.sleep(3)
        worker.check_alive()
        for create in b.create.values():
            for _ in range(10):  # warm-up: the worker's threads import lazily and open their connections
                job_timing(create)
        wait_for_quiet(b.args.quiet_wait)
        before = Sample.take(worker=worker.cpu)
        for _ in range(b.args.jobs):
            for name, create in b.create.items():
                timings[name].append(job_timing(create))
        cpu = Sample.take(worker=worker.cpu).cpu_since(before)["worker"]
    return EmailRun(target, number, timings, cpu)


def report_email(args: argparse.Namespace, runs: list[EmailRun]) -> None:
    print(f"\nemail: {args.jobs} jobs of each type, one at a time, worker threads x8; milliseconds\n")
    apps = [run for run in runs if run.target == "app"]
    if args.against:
        table(EMAIL_ROUND_COLUMNS, [run.row() for run in runs])
        print()
        pairs = [(app.emails_per_second, other.emails_per_second) for app, other in zip(apps, runs[1::2], strict=True)]
        judge_rounds(f"app/{args.against} email jobs/s", pairs, MIN_SHARE_OF_BEFORE)
    else:
        (run,) = apps
        totals = {name: [timing[0] for timing in timings] for name, timings in run.timings.items()}
        rows = [
            (name, run.p50(name), percentile(totals[name], 0.9), max(totals[name]), run.p50(name, 1), run.p50(name, 2))
            for name in run.timings
        ]
        table(EMAIL_COLUMNS, rows)
        print()
    ratio = median(run.p50("email") / run.p50("webhook") for run in apps)
    verdict("email p50 / webhook p50", f"{ratio:.2f}", f"<= {MAX_EMAIL_RATIO:.2f}", ratio <= MAX_EMAIL_RATIO)


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "jobs", 200, "jobs of each type", env="email")
    option(parser, "rounds", 3, "with --against: this code then the revision, this many times", env="email")
    option(parser, "against", "", "a git revision whose worker runs the same jobs, rounds alternating", env="email")


def run(args: argparse.Namespace) -> None:
    authority = make_tls()
    with own_services(args):
        from notifications.services import email_job_create, webhook_job_create
        from tests.fakes.providers import FakeSendGrid
        from tests.fakes.receiver import Receiver

        # SendGrid over HTTPS, as the real one: a new connection costs a TCP and a TLS handshake.
        with FakeSendGrid().speak_tls(authority) as sendgrid, Receiver(authority) as receiver:
            sendgrid.accept_key("bench-sendgrid-key")
            account = seed_accounts(1, prefix="email", secrets=True)[0].account
            sends_through_sendgrid(account, "bench-sendgrid-key")
            create = {
                "email": lambda: email_job_create(
                    account=account, to="user@example.com", subject="Hi", body="<p>x</p>"
                ),
                "webhook": lambda: webhook_job_create(account=account, url=receiver.url(), payload={"event": "bench"}),
            }
            env = {"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "WEBHOOK_CA_BUNDLE": str(TLS_DIR / "ca.pem")}
            # requests trusts the fake provider's CA through the variable it reads for a private CA.
            env.update(REQUESTS_CA_BUNDLE=str(TLS_DIR / "ca-bundle.pem"), SENDGRID_API_URL=sendgrid.url)
            bench = EmailBench(args, {**env, "LOG_LEVEL": "WARNING"}, create)
            # Against a revision, its worker and this code's alternate, round by round.
            targets, rounds = (("app", "before"), args.rounds) if args.against else (("app",), 1)
            runs = [email_run(bench, target, n) for n in range(1, rounds + 1) for target in targets]
    report_email(args, runs)
