"""NotifyHub beyond one machine (docs/operations.md, "Beyond one machine"): every process's DATABASE_URL at a
PgBouncer in transaction pooling with DATABASE_POOLER=pgbouncer, the Procfile's web and beat, and three worker nodes
sharing one queue, each its own Celery node name. A worker killed here is never started again: the others take its
jobs once its leases end (docs/delivery-engine.md, "Leases").

The scenarios are held to test_faults.py's bars: every accepted job delivered, a repeat only under its job's
X-Webhook-Id, none unfinished, each within 30 s of its fault's end, and no API answer but 202, 429 or 503 (a
statement prepared on one server connection and run on another would be a 500).
"""

from __future__ import annotations

import json

import pytest

from bench.common import ACCEPT_PATH, API_HEADERS, PROXY_HEADERS, Exchange, one_request
from tests.faults.harness import Harness
from tests.faults.load import Traffic, send_together
from tests.faults.test_faults import DEADLINE_SECONDS, check, postgres_restarted_under_load

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240 + DEADLINE_SECONDS)]

NODES = ["worker.1", "worker.2", "worker.3"]
# One job in five is answered after a second, so the kill finds attempts under way on the node it kills.
NODE_LOST = Traffic("node-lost", rate=20, count=400, slow=lambda n: n % 5 == 0, slow_seconds=1.0)
KILL_AT = 6.0
POOLER_STOP_AT, POOLER_DOWN_SECONDS = 8.0, 8.0
# One job in four is answered after 1.5 s, so attempts are under way when the pooler drops every connection.
POOLER = Traffic("pooler", rate=15, count=300, slow=lambda n: n % 4 == 0, slow_seconds=1.5)
# The health check's probes give up after 2 s (core/health.py); the request may take a little more.
HEALTH_ANSWERS_WITHIN_SECONDS = 3.5
RACE_KEY = "race-through-the-pool"
RACERS = 20


def test_twenty_concurrent_sends_with_one_idempotency_key_make_one_job(pooled_harness: Harness) -> None:
    body = {"url": pooled_harness.receiver.url("/race/fast"), "payload": {"race": True}, "idempotencyKey": RACE_KEY}

    answers = send_together(
        port=pooled_harness.processes.web_port,
        api_key=pooled_harness.api_keys[0],
        body=json.dumps(body).encode(),
        count=RACERS,
    )

    assert sorted(status for status, _ in answers) == ["202"] + ["409"] * (RACERS - 1), answers
    refusals = {json.loads(content)["error"] for status, content in answers if status == "409"}
    assert refusals == {"Duplicate request detected"}
    assert pooled_harness.jobs_with_idempotency_key(RACE_KEY) == 1


def test_a_postgres_restart_through_pgbouncer(pooled_harness: Harness) -> None:
    check(pooled_harness, postgres_restarted_under_load(pooled_harness, "PostgreSQL restarted, through PgBouncer"))


def test_one_of_three_worker_nodes_killed_for_good(pooled_harness: Harness) -> None:
    assert sorted(pooled_harness.processes.worker_pids()) == NODES

    with pooled_harness.sending(NODE_LOST) as load:
        load.wait_until(KILL_AT)
        fault = pooled_harness.kill_worker("worker.2")

    notes = "worker.2 SIGKILLed and not started again; worker.1 and worker.3 went on"
    figures = pooled_harness.settle(
        "1 of 3 worker nodes SIGKILLed, through PgBouncer",
        load,
        [fault],
        deadline_seconds=DEADLINE_SECONDS,
        notes=notes,
    )
    assert sorted(pooled_harness.processes.worker_pids()) == ["worker.1", "worker.3"]
    check(pooled_harness, figures)


def test_pgbouncer_stopped_for_eight_seconds(pooled_harness: Harness) -> None:
    with pooled_harness.sending(POOLER) as load:
        load.wait_until(POOLER_STOP_AT)
        with pooled_harness.pooler_down(POOLER_DOWN_SECONDS) as faults:
            send, health = a_send(pooled_harness), the_health_check(pooled_harness)

    assert (send.status, send.headers.get("Retry-After")) == (503, "5")
    assert (send.json()["error"], send.json()["code"]) == ("Service temporarily unavailable", "service_unavailable")
    assert (health.status, health.json()["details"]) == (503, {"database": "down", "broker": "ok"})
    assert any(answer.status == "503" for answer in load.answers), "no send met the pooler down"
    notes = "every client connection dropped"
    check(
        pooled_harness,
        pooled_harness.settle("PgBouncer stopped 8 s", load, faults, deadline_seconds=DEADLINE_SECONDS, notes=notes),
    )


def test_the_health_check_answers_in_time_while_pgbouncer_holds_its_queries(pooled_harness: Harness) -> None:
    pooler = pooled_harness.pooler
    assert pooler is not None
    # PAUSE: PgBouncer takes connections but gives no query a server, as while PostgreSQL is down behind it.
    pooler.admin("PAUSE")
    try:
        health = the_health_check(pooled_harness)
    finally:
        pooler.admin("RESUME")

    assert (health.status, health.json()["details"]) == (503, {"database": "down", "broker": "ok"})
    assert health.seconds < HEALTH_ANSWERS_WITHIN_SECONDS
    assert the_health_check(pooled_harness).status == 200


def a_send(harness: Harness) -> Exchange:
    body = json.dumps({"url": harness.receiver.url("/pooler/fast"), "payload": {"while": "pooler down"}}).encode()
    headers = {**API_HEADERS, "X-API-Key": harness.api_keys[0]}
    return one_request(harness.processes.web_port, "POST", ACCEPT_PATH, headers, body)


def the_health_check(harness: Harness) -> Exchange:
    return one_request(harness.processes.web_port, "GET", "/api/v1/health", PROXY_HEADERS)
