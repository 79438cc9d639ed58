"""A paced API client for bench/delivery.py's latency phase: a steady rate, not as fast as possible.

Threads share the schedule (request ``i`` is due at ``start + i / rate``), each on its own keep-alive connection
to gunicorn. They are many so the schedule holds even when the API is slow: at 100 a second and answers taking up
to 600 ms, 60 requests are in flight. Fewer threads would quietly lower the rate exactly when the server struggles.

Each 202 is stamped with ``time.monotonic()`` when its body has been read: the moment the client knows the job was
accepted, on the clock the receiver stamps arrivals with.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ACCEPT_PATH = "/api/v1/notifications/webhook"
SENDERS = 64


@dataclass(frozen=True)
class Accepted:
    job_id: str
    sent_at: float  # monotonic, when the request was written
    accepted_at: float  # monotonic, when the 202 had been read


@dataclass
class LoadResult:
    accepted: list[Accepted] = field(default_factory=list)
    # "status 429", "ConnectionResetError", ...: anything that was not a 202 with a job id.
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0  # from the first request's due time to the last answer

    @property
    def rate(self) -> float:
        return len(self.accepted) / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Plan:
    port: int
    keys: list[str]
    url: str
    payload: dict[str, Any]
    rate: float
    seconds: float

    @property
    def total(self) -> int:
        return round(self.rate * self.seconds)


def _post(connection: http.client.HTTPConnection, key: str, body: bytes) -> tuple[int, bytes]:
    connection.request("POST", ACCEPT_PATH, body=body, headers={"Content-Type": "application/json", "X-API-Key": key})
    response = connection.getresponse()
    return response.status, response.read()


def _sender(plan: Plan, first: int, start: float, result: LoadResult, lock: threading.Lock) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", plan.port, timeout=30)
    body = json.dumps({"url": plan.url, "payload": plan.payload}).encode()
    accepted: list[Accepted] = []
    errors: Counter[str] = Counter()
    for number in range(first, plan.total, SENDERS):
        delay = start + number / plan.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sent_at = time.monotonic()
        try:
            status, answer = _post(connection, plan.keys[number % len(plan.keys)], body)
        except (OSError, http.client.HTTPException) as error:
            # Not retried: a retry could accept the job twice. A fresh connection serves the next request.
            errors[type(error).__name__] += 1
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", plan.port, timeout=30)
            continue
        accepted_at = time.monotonic()
        if status == 202:
            accepted.append(Accepted(json.loads(answer)["data"]["jobId"], sent_at, accepted_at))
        else:
            errors[f"status {status}"] += 1
    connection.close()
    with lock:
        result.accepted.extend(accepted)
        result.errors.update(errors)


def paced_load(plan: Plan) -> LoadResult:
    """Sends ``plan.total`` webhook requests at ``plan.rate`` a second; returns what was accepted, and when."""
    result = LoadResult()
    lock = threading.Lock()
    start = time.monotonic() + 0.1
    threads = [
        threading.Thread(target=_sender, args=(plan, first, start, result, lock), daemon=True)
        for first in range(SENDERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.seconds = time.monotonic() - start
    return result
