"""Webhook sends through the real API at a steady rate, from threads, while a test breaks a service; or many at once.

Every request's answer is kept: its status (or the name of the error when none came), when it was sent and answered,
and the job id of a 202. Requests are not retried: a retry could make a second job of one request.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from bench.common import ACCEPT_PATH, API_HEADERS

# The fastest traffic a test sends: the API keys are made for it.
MAX_RATE = 20.0
# Enough threads that a request hanging on a broken service does not hold the others back.
SENDERS = 16
REQUEST_TIMEOUT_SECONDS = 30


def never(number: int) -> bool:
    return False


@dataclass(frozen=True)
class Traffic:
    """``count`` webhook sends at ``rate`` a second to the receiver's /<name>/fast, or /<name>/slow (answered after
    ``slow_seconds``) for the requests ``slow`` picks by number: a slow answer keeps an attempt in progress."""

    name: str
    rate: float
    count: int
    slow: Callable[[int], bool] = field(default=never)
    slow_seconds: float = 1.0

    def path(self, number: int) -> str:
        return f"/{self.name}/{'slow' if self.slow(number) else 'fast'}"

    def body(self, url: str, number: int) -> bytes:
        return json.dumps({"url": url, "payload": {"traffic": self.name, "n": number}}).encode()


@dataclass(frozen=True)
class Answer:
    number: int
    sent_at: float  # time.time(), the receiver's clock
    answered_at: float
    status: str  # "202", or the error's name when no answer came ("TimeoutError")
    job_id: str | None = None


class Load:
    """Sends ``traffic``: request n is due at the start + n / rate, taken by whichever sender thread is free."""

    def __init__(self, traffic: Traffic, *, port: int, api_keys: list[str], url: Callable[[str], str]) -> None:
        self.traffic = traffic
        self.answers: list[Answer] = []
        self._port = port
        self._api_keys = api_keys
        self._url = url
        self._numbers = iter(range(traffic.count))  # a C iterator: threads may share it
        self._stopped = threading.Event()
        self._threads = [threading.Thread(target=self._send_all, daemon=True) for _ in range(SENDERS)]
        self.started_at = 0.0

    def start(self) -> None:
        self.started_at = time.time() + 0.1
        for thread in self._threads:
            thread.start()

    def wait_until(self, seconds: float) -> None:
        """Sleeps until ``seconds`` after the start."""
        time.sleep(max(0.0, self.started_at + seconds - time.time()))

    def stop(self) -> None:
        """The requests not yet sent are not sent."""
        self._stopped.set()

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _send_all(self) -> None:
        for number in self._numbers:
            self._stopped.wait(max(0.0, self.started_at + number / self.traffic.rate - time.time()))
            if self._stopped.is_set():
                return
            answer = self._send(number)
            self.answers.append(answer)  # list.append is atomic

    def _send(self, number: int) -> Answer:
        body = self.traffic.body(self._url(self.traffic.path(number)), number)
        headers = {**API_HEADERS, "X-API-Key": self._api_keys[number % len(self._api_keys)]}
        connection = http.client.HTTPConnection("127.0.0.1", self._port, timeout=REQUEST_TIMEOUT_SECONDS)
        sent_at = time.time()
        try:
            connection.request("POST", ACCEPT_PATH, body=body, headers=headers)
            response = connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException) as error:
            return Answer(number, sent_at, time.time(), type(error).__name__)
        finally:
            connection.close()
        job_id = json.loads(content)["data"]["jobId"] if response.status == 202 else None
        return Answer(number, sent_at, time.time(), str(response.status), job_id)


def send_together(*, port: int, api_key: str, body: bytes, count: int) -> list[tuple[str, bytes]]:
    """``count`` sends of one ``body`` with one key, each on a connection of its own, let go at once: each one's
    status (or the error's name) and the body it was answered with."""
    start = threading.Barrier(count, timeout=REQUEST_TIMEOUT_SECONDS)

    def send(_: int) -> tuple[str, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_SECONDS)
        try:
            connection.connect()  # connected first, so the barrier lets go of requests, not handshakes
            start.wait()
            connection.request("POST", ACCEPT_PATH, body=body, headers={**API_HEADERS, "X-API-Key": api_key})
            response = connection.getresponse()
            return str(response.status), response.read()
        except (OSError, http.client.HTTPException) as error:
            return type(error).__name__, b""
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(send, range(count)))
