"""customer-webhooks-delete: deleting an app's endpoint, then an app, that has many deliveries.

An app of one account gets one endpoint and ``--deliveries`` messages, each delivered to the endpoint: a message, its
webhook job and one delivery log each, seeded in set-based SQL. Then `endpoint_delete` runs in this process, as the
API's DELETE calls it: timed, and again on a fresh seed under tracemalloc for the memory it holds at its peak; then
the same for `app_delete` (its messages go too). Every delivery, log and message must be gone after each.
bench/README.md says how to read the report. (Not `customer_webhooks.py`: run as a script, bench/ is on the path,
where that name would hide the app.)
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from bench.common import column, log, option, own_services, run_sql, seed_accounts, table, verdict, wait_for_quiet

HELP = "an endpoint's and an app's DELETE with 20,000 deliveries: time and peak memory"
MAX_SECONDS = 2.0
MAX_PEAK_MB = 50.0
COLUMNS = "delete<10|deliveries>11|seconds>9.2f|peak MB>9.1f|left>6|other load>11.0%"
# About a kilobyte, as an invoice event is.
PAYLOAD = json.dumps({"type": "invoice.paid", "invoice": {"id": "in_1", "lines": ["x" * 40] * 20}})

# One message a delivery, a second apart, the newest now.
MESSAGES_SQL = """
INSERT INTO {message} ({id}, {account}, {app}, {event_type}, {payload}, {test}, {created_at})
SELECT gen_random_uuid(), %(account)s, %(app)s, 'invoice.paid', %(payload)s, false, now() - g * interval '1 second'
FROM generate_series(1, %(deliveries)s) AS g
"""
# Each message's delivery to the endpoint, completed, and its one attempt's log.
JOBS_SQL = """
INSERT INTO {job} ({id}, {account}, {type}, {status}, {priority}, {payload}, {destination}, {message}, {endpoint},
                   {attempts}, {max_attempts}, {claims}, {created_at}, {completed_at}, {finished_at})
SELECT gen_random_uuid(), %(account)s, 'webhook', 'completed', 5, %(job_payload)s, 'hooks.acme.example', m.{message_id},
       %(endpoint)s, 1, 8, 1, m.{message_created}, m.{message_created}, m.{message_created}
FROM {message_table} m WHERE m.{message_app} = %(app)s
"""
LOGS_SQL = """
INSERT INTO {log} ({id}, {job}, {attempt}, {status}, {response_status}, {duration_ms}, {excerpt}, {created_at})
SELECT gen_random_uuid(), j.{job_id}, 1, 'success', 200, 40, '', j.{job_created} FROM {job_table} j
WHERE j.{job_endpoint} = %(endpoint)s
"""


def options(parser: argparse.ArgumentParser) -> None:
    option(
        parser,
        "deliveries",
        20_000,
        "an endpoint's deliveries (each its own message and log)",
        env="customer-webhooks-delete",
    )


def run(args: argparse.Namespace) -> None:
    with own_services(args):
        account = seed_accounts(1, prefix="deletes")[0].account
        rows = []
        for kind in ("endpoint", "app"):
            busy = wait_for_quiet(args.quiet_wait)
            seconds, left = measure(account, kind, args.deliveries, traced=False)
            _, peak_left = measure(account, kind, args.deliveries, traced=True)
            rows.append((kind, args.deliveries, seconds, peak_left[0], left[1] + peak_left[1], busy))
    report(rows)


def measure(account: Any, kind: str, deliveries: int, *, traced: bool) -> tuple[float, tuple[float, int]]:
    """Seeds an app, then deletes its endpoint (``kind`` "endpoint") or itself: the seconds it took, the peak MB
    tracemalloc saw (with ``traced``; 0 without) and the deliveries and logs left; then clears the account."""
    from customer_webhooks.services import app_delete, endpoint_delete

    app, endpoint = seed(account, deliveries)
    delete: Callable[[], None] = (
        (lambda: endpoint_delete(endpoint)) if kind == "endpoint" else (lambda: app_delete(app))
    )
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    delete()
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 1e6 if traced else 0.0
    tracemalloc.stop()
    log(f"deletes: the {kind} with {deliveries:,} deliveries deleted in {seconds:.2f} s{' (traced)' * traced}")
    left = leftovers(account)
    clear(account)
    return seconds, (peak, left)


def seed(account: Any, deliveries: int) -> tuple[Any, Any]:
    from customer_webhooks.models import Message
    from customer_webhooks.services import app_create, endpoint_create
    from notifications.models import DeliveryLog, Job

    app = app_create(account=account, name="Acme")
    endpoint = endpoint_create(app=app, url="https://hooks.acme.example/in")
    message = {name: column(Message, name) for name in ("id", "account", "app", "event_type", "payload", "test")}
    message["created_at"] = column(Message, "created_at")
    run_sql(
        MESSAGES_SQL.format(message=Message._meta.db_table, **message),
        {"account": account.pk, "app": app.pk, "payload": PAYLOAD, "deliveries": deliveries},
    )
    job_fields = ["id", "account", "type", "status", "priority", "payload", "destination", "message", "endpoint"]
    job_fields += ["attempts", "max_attempts", "claims", "created_at", "completed_at", "finished_at"]
    job_payload = json.dumps({"url": endpoint.url, "method": "POST", "payload": json.loads(PAYLOAD)})
    run_sql(
        JOBS_SQL.format(
            job=Job._meta.db_table,
            **{name: column(Job, name) for name in job_fields},
            message_table=Message._meta.db_table,
            message_id=message["id"],
            message_created=message["created_at"],
            message_app=message["app"],
        ),
        {"account": account.pk, "app": app.pk, "endpoint": endpoint.pk, "job_payload": job_payload},
    )
    log_fields = ["id", "job", "attempt", "status", "response_status", "duration_ms", "created_at"]
    run_sql(
        LOGS_SQL.format(
            log=DeliveryLog._meta.db_table,
            **{name: column(DeliveryLog, name) for name in log_fields},
            excerpt=column(DeliveryLog, "response_excerpt"),
            job_table=Job._meta.db_table,
            job_id=column(Job, "id"),
            job_created=column(Job, "created_at"),
            job_endpoint=column(Job, "endpoint"),
        ),
        {"endpoint": endpoint.pk},
    )
    run_sql("ANALYZE")
    return app, endpoint


def clear(account: Any) -> None:
    """The account's apps gone, whatever the services left: the next measurement starts from none. The messages in
    SQL first, so the ORM's cascade has only the app and its endpoints to load."""
    from customer_webhooks.models import App, Message

    table_name, owner = Message._meta.db_table, column(Message, "account")
    run_sql(f"DELETE FROM {table_name} WHERE {owner} = %(account)s", {"account": account.pk})
    App.objects.filter(account=account).delete()


def leftovers(account: Any) -> int:
    """The account's jobs and delivery logs still there."""
    from notifications.models import DeliveryLog, Job

    return Job.objects.filter(account=account).count() + DeliveryLog.objects.filter(job__account=account).count()


def report(rows: list[tuple[Any, ...]]) -> None:
    print("\nDeleting through the services, in one process (seconds untraced; peak MB a second run under tracemalloc)")
    table(COLUMNS, rows)
    for kind, _, seconds, peak, left, _ in rows:
        verdict(f"{kind} delete time", f"{seconds:.2f} s", f"< {MAX_SECONDS:g} s", seconds < MAX_SECONDS)
        verdict(f"{kind} delete peak", f"{peak:.1f} MB", f"< {MAX_PEAK_MB:g} MB", peak < MAX_PEAK_MB)
        verdict(f"{kind} delete leaves", f"{left} rows", "0", left == 0)
