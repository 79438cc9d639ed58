"""message-delivery: a message's deliveries to its app's 10 endpoints against single webhook jobs, deliveries a second.

The issue's target: a message to 10 endpoints has its 10 deliveries go out at the delivery bench's rate per delivery,
at least 0.90 of single sends'. The delivery bench's throughput run (``delivery.throughput``: the app's workers, the
clock from the commit to the last arrival), in alternating rounds: ``single``, ``--jobs`` webhook jobs stored as the
delivery bench's app target stores them; ``message``, ``--jobs`` / ``--endpoints`` messages stored by the messages
API's own service (``customer_webhooks.messages.message_send``), each to an app whose endpoints are paths of the
receiver with secrets of their own. A message's deliveries share its id (docs/customer-webhooks.md, "Delivery"), so
the receiver records arrivals by id and path. bench/README.md says how to read the report.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from bench import delivery
from bench.common import BenchError, judge_rounds, log, make_tls, option, own_services, seed_accounts, table
from bench.delivery import APP_WORKER_ENV, PAYLOAD, Delivery, DeliveryRun, started_receiver
from bench.receiver import Dump, arrival_key

HELP = "a message's deliveries to 10 endpoints against single webhook jobs: deliveries a second"
# run.py: the database this bench recreates unless told another, apart from the other benches' notifyhub_bench.
DATABASE = "notifyhub_bench_message_delivery"
ENV = "message_delivery"  # its options' variables: BENCH_MESSAGE_DELIVERY_<OPTION>
MIN_SHARE_OF_SINGLE = 0.90  # the issue: a message's deliveries at the delivery bench's rate per delivery
TARGET_ENDPOINTS = 10
MAX_ENDPOINTS = 20  # customer_webhooks.models.ENDPOINTS_PER_APP (imported only once Django is set up)
EVENT_TYPE = "invoice.paid"  # PAYLOAD's event, the one type every endpoint takes
TARGETS = ("single", "message")
SINGLE_PATH = "/hooks/bench"  # Delivery.url's
# What Standard Webhooks' verify() reads; the receiver samples them under these names.
STANDARD_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")


@dataclass
class MessageDelivery(Delivery):
    """The delivery bench's machinery with each account's app (uid ``bench``) and its endpoints on the receiver, at
    /hooks/bench/<account>/<endpoint>; ``single`` runs store the delivery bench's webhook jobs, ``message`` runs
    messages to the apps, and both return their deliveries' keys as the receiver records them by id and path."""

    # customer_webhooks.models.App and its endpoints (all enabled), one per account, in order
    apps: list[tuple[Any, list[Any]]] = field(default_factory=list)
    paths: dict[Any, str] = field(default_factory=dict)  # each endpoint's path, by its id
    secrets: dict[str, str] = field(default_factory=dict)  # each endpoint's secret, by its path

    def add_apps(self, endpoints: int) -> None:
        """An app in each account with ``endpoints`` endpoints taking EVENT_TYPE, created by the apps API's services:
        a secret of its own each, read back as the engine reads it."""
        from core.crypto import decrypt
        from customer_webhooks.services import app_create, endpoint_create

        base = f"https://127.0.0.1:{self.args.receiver_port}{SINGLE_PATH}"
        for number, seeded in enumerate(self.accounts):
            app = app_create(account=seeded.account, name=f"Bench customer {number}", uid="bench")
            made = []
            for place in range(endpoints):
                path = f"{SINGLE_PATH}/{number}/{place}"
                endpoint = endpoint_create(app=app, url=f"{base}/{number}/{place}", event_types=[EVENT_TYPE])
                self.paths[endpoint.id], self.secrets[path] = path, decrypt(endpoint.encrypted_secret)
                made.append(endpoint)
            self.apps.append((app, made))

    def enqueue(self, target: str, count: int, on_start: Callable[[], None] = lambda: None) -> list[str]:
        """``single``: ``count`` jobs as the delivery bench's app target stores them. ``message``: enough messages for
        ``count`` deliveries, over the accounts' apps in turn, each by the messages API's service in one transaction
        whose commit publishes their jobs' tasks (as the API's commits do); ``on_start`` runs just after."""
        if target == "single":
            return [arrival_key(job_id, SINGLE_PATH) for job_id in delivery.enqueue(self, "app", count, on_start)]
        from django.db import transaction

        from customer_webhooks.messages import message_send

        endpoints = self.args.endpoints
        keys: list[str] = []
        with transaction.atomic():
            transaction.on_commit(on_start)  # registered first: runs after COMMIT, before the dispatcher is asked
            for number in range(math.ceil(count / endpoints)):
                app, enabled = self.apps[number % len(self.apps)]
                sent = message_send(
                    account=app.account, app=app, enabled_endpoints=enabled, event_type=EVENT_TYPE, payload=PAYLOAD
                )
                if len(sent.deliveries) != endpoints:
                    raise BenchError(f"a message went to {len(sent.deliveries)} endpoints of its app's {endpoints}")
                keys += [arrival_key(str(sent.message.id), self.paths[job.endpoint_id]) for job in sent.deliveries]
        return keys

    def signatures(self, dump: Dump, target: str) -> tuple[int, int]:
        """``single``: the delivery bench's check with the accounts' secrets. ``message``: sampled requests that
        ``endpoint_signed`` passes; of those sampled plus those unsigned."""
        if target == "single":
            return super().signatures(dump, target)
        return sum(endpoint_signed(sample, self.secrets) for sample in dump.samples), len(dump.samples) + dump.unsigned


def endpoint_signed(sample: dict[str, str], secrets: dict[str, str]) -> bool:
    """Whether a sampled request carries PAYLOAD signed in both schemes with the secret of the endpoint at its path
    (``secrets``, by path): X-Webhook-Signature as ``core.signing`` checks it, and Standard Webhooks' headers as that
    specification's own library does, which signs the id too."""
    from standardwebhooks.webhooks import Webhook, WebhookVerificationError

    from core.signing import verify_signature
    from notifications.delivery.wire import json_bytes

    body, secret = json_bytes(PAYLOAD), secrets.get(sample["path"])
    if secret is None or sample["body"].encode() != body or not verify_signature(secret, sample["signature"], body):
        return False
    try:
        Webhook(secret).verify(body, {name: sample[name] for name in STANDARD_HEADERS})
    except WebhookVerificationError:
        return False
    return True


def report(runs: list[DeliveryRun], endpoints: int) -> None:
    print()
    table(delivery.THROUGHPUT_COLUMNS, [run.row() for run in runs])
    print()
    singles, messages = runs[0::2], runs[1::2]
    print(f"a message to {endpoints} endpoints: its deliveries at >= {MIN_SHARE_OF_SINGLE:.0%} of single sends' rate:")
    pairs = [(message.rate, single.rate) for single, message in zip(singles, messages, strict=True)]
    judge_rounds("message/single deliveries/s", pairs, MIN_SHARE_OF_SINGLE)
    if endpoints != TARGET_ENDPOINTS:
        print(f"  note: the target is set for messages to {TARGET_ENDPOINTS} endpoints; these had {endpoints}")
    cpu = median(
        message.cpu_ms("worker") / max(single.cpu_ms("worker"), 1e-9)
        for single, message in zip(singles, messages, strict=True)
    )
    print(f"  worker CPU per delivery: a message's {cpu:.2f}x a single send's (not a target; explains the ratio)")
    delivery.throughput_verdicts(runs)


def options(parser: argparse.ArgumentParser) -> None:
    option(parser, "jobs", 5000, "deliveries a run; a message run: --jobs / --endpoints messages, rounded up", env=ENV)
    option(parser, "rounds", 3, "single then message, this many times; the verdict takes the median ratio", env=ENV)
    option(parser, "endpoints", TARGET_ENDPOINTS, f"endpoints each message reaches, 1 to {MAX_ENDPOINTS}", env=ENV)
    option(parser, "pool", "threads", "worker pool", env=ENV, choices=["threads", "prefork"])
    option(parser, "concurrency", 8, "worker concurrency", env=ENV)
    option(parser, "processes", 2, "worker processes side by side (one per core)", env=ENV)
    option(parser, "receiver-port", 8745, "the HTTPS receiver's port", env=ENV)


def run(args: argparse.Namespace) -> None:
    if not 1 <= args.endpoints <= MAX_ENDPOINTS:
        raise BenchError(f"--endpoints must be 1 to {MAX_ENDPOINTS}, not {args.endpoints}")
    log(
        f"message-delivery: {args.processes} * --pool {args.pool} --concurrency {args.concurrency}, rounds: "
        f"{args.rounds}, single webhook jobs then messages to {args.endpoints} endpoints"
    )
    make_tls()
    # Each run's jobs and its warm-up's, single and message alike, spread under every account's monthly quota.
    units = (args.jobs + 200) * len(TARGETS) * args.rounds
    count = max(40, math.ceil(units / delivery.JOBS_PER_ACCOUNT))
    with (
        own_services(args),
        started_receiver(args.receiver_port, by_path=True, name="receiver-message-delivery") as (receiver, client),
    ):
        log(f"message-delivery: seeding {count} Startup accounts, each with an app of {args.endpoints} endpoints")
        accounts = seed_accounts(count, prefix="msgdeliv", secrets=True)
        d = MessageDelivery(args, dict(APP_WORKER_ENV), receiver, client, accounts, floor_secret="")
        d.add_apps(args.endpoints)
        runs = [delivery.throughput(d, target, n) for n in range(1, args.rounds + 1) for target in TARGETS]
    report(runs, args.endpoints)
