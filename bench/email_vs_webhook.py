"""Email path against webhook path: does sending through a provider add hidden waits?

Issue 4's bar: in one run, an email job through a fake provider that answers at once completes
within 2x the time of a webhook job to a receiver that answers at once.

One Celery worker (the Procfile's production configuration) on PostgreSQL and Redis; the fake
SendGrid and the HTTPS receiver run in this process. Jobs are created one at a time through the
same services the API calls, alternating email and webhook, each waited for before the next, so
no job queues behind another. Times come from the job rows: ``completed_at - created_at``
(accept to delivered), split into pickup (``started_at - created_at``) and attempt.

    .venv/bin/python bench/email_vs_webhook.py            # 200 jobs of each type
    BENCH_JOBS=50 .venv/bin/python bench/email_vs_webhook.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import trustme

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import BenchError, bench_main, flush_redis, reset_database  # noqa: E402
from bench.delivery import migrate  # noqa: E402
from bench.delivery_procs import running  # noqa: E402

DATABASE_URL = os.environ.get("BENCH_EMAIL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/notifyhub_bench_email")
REDIS_URL = os.environ.get("BENCH_EMAIL_REDIS_URL", "redis://127.0.0.1:6379/12")
VAR_DIR = ROOT / "var" / "bench-email"
JOBS = int(os.environ.get("BENCH_JOBS", "200"))
WARM_UP = 10
WORKER = ["--pool", "threads", "--concurrency", os.environ.get("WORKER_CONCURRENCY", "8")]


def environment(ca_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": DATABASE_URL,
        "REDIS_URL": REDIS_URL,
        "NOTIFYHUB_VAR_DIR": str(VAR_DIR),
        "DJANGO_SETTINGS_MODULE": "notifyhub.settings",
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "WEBHOOK_CA_BUNDLE": str(ca_path),
        "LOG_LEVEL": "WARNING",
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    return bench_main(run)


def run() -> None:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca_path = VAR_DIR / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    env = environment(ca_path)
    try:
        reset_database(DATABASE_URL)
        flush_redis(REDIS_URL)
        migrate(env)
        os.environ.update(env)
        measure(env, ca)
    finally:
        flush_redis(REDIS_URL)


def measure(env: dict[str, str], ca: trustme.CA) -> None:
    import django

    django.setup()
    from tests.fakes.providers import FakeSendGrid
    from tests.fakes.receiver import Receiver

    with FakeSendGrid() as sendgrid, Receiver(ca) as receiver:
        sendgrid.accept_key("bench-sendgrid-key")
        env["SENDGRID_API_URL"] = sendgrid.url
        senders = prepare_account(receiver.url())
        command = [sys.executable, "-m", "celery", "--app", "notifyhub", "worker", *WORKER, "--loglevel", "WARNING"]
        with running("worker", command, cwd=ROOT, env=env, log_path=VAR_DIR / "worker.log") as worker:
            time.sleep(3)
            worker.check_alive()
            for send in senders.values():
                for _ in range(WARM_UP):
                    complete(send)
            results = {name: [] for name in senders}  # type: dict[str, list[tuple[float, float, float]]]
            for _ in range(JOBS):
                for name, send in senders.items():
                    results[name].append(complete(send))
    report(results)


def prepare_account(webhook_url: str) -> dict[str, Callable[[], str]]:
    from django.utils import timezone

    from accounts.services import account_create, provider_key_set, signing_secret_generate
    from domains.models import DomainRegistration, DomainStatus, SenderDomain
    from notifications.services import email_job_create, webhook_job_create

    account, _ = account_create(email="bench@example.com", plan="startup")
    provider_key_set(account=account, provider="SENDGRID", api_key="bench-sendgrid-key")
    domain = SenderDomain.objects.create(
        account=account, name="example.com", status=DomainStatus.VERIFIED, verified_at=timezone.now()
    )
    DomainRegistration.objects.create(domain=domain, provider="SENDGRID", provider_domain_id="1", verified=True)
    signing_secret_generate(account=account)
    payload = {"event": "bench", "n": 1}
    return {
        "email": lambda: str(
            email_job_create(account=account, to="user@example.com", subject="Hi", body="<p>x</p>").id
        ),
        "webhook": lambda: str(webhook_job_create(account=account, url=webhook_url, payload=payload).id),
    }


def complete(send: Callable[[], str]) -> tuple[float, float, float]:
    """Creates one job, waits for it, returns (total, pickup, attempt) in milliseconds."""
    from notifications.models import Job

    job_id = send()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        job = Job.objects.only("status", "created_at", "started_at", "completed_at").get(id=job_id)
        if job.status == "completed":
            return tuple(  # type: ignore[return-value]
                (end - start).total_seconds() * 1000
                for start, end in [
                    (job.created_at, job.completed_at),
                    (job.created_at, job.started_at),
                    (job.started_at, job.completed_at),
                ]
            )
        if job.status == "failed":
            raise BenchError(f"job {job_id} failed: {job.error_message}")
        time.sleep(0.002)
    raise BenchError(f"job {job_id} did not complete within 30 s")


def report(results: dict[str, list[tuple[float, float, float]]]) -> None:
    print(f"\n{JOBS} jobs of each type, one at a time, worker {' '.join(WORKER)}; milliseconds\n")
    print(f"{'path':<8} {'p50':>7} {'p90':>7} {'max':>7}   {'pickup p50':>10} {'attempt p50':>11}")
    medians = {}
    for name, rows in results.items():
        totals = [row[0] for row in rows]
        medians[name] = statistics.median(totals)
        print(
            f"{name:<8} {medians[name]:>7.1f} {percentile(totals, 0.9):>7.1f} {max(totals):>7.1f}"
            f"   {statistics.median(row[1] for row in rows):>10.1f} {statistics.median(row[2] for row in rows):>11.1f}"
        )
    ratio = medians["email"] / medians["webhook"]
    verdict = "PASS" if ratio <= 2 else "FAIL"
    print(f"\nemail p50 / webhook p50 = {ratio:.2f}  (target <= 2.00)  {verdict}")


if __name__ == "__main__":
    sys.exit(main())
