"""A customer's webhook endpoint for bench/delivery.py: HTTPS, keep-alive, and as cheap per request as stdlib allows.

tests/fakes/receiver.py (a thread per connection, BaseHTTPRequestHandler) spends more CPU per request than the
workers it would measure. This one is a single asyncio process speaking just enough HTTP/1.1: it reads the head
and the Content-Length body, notes the X-Webhook-Id and the arrival time, and answers 200 on the same connection.

Arrival times are ``time.monotonic()``: CLOCK_MONOTONIC is one clock for every process on a Linux box, so the
bench can subtract the moment its client saw the 202 without wall-clock jumps.

Control requests share the port, under /_bench/ (the bench asks over the same TLS it checks):
  GET /_bench/count  -> {"requests": n}
  GET /_bench/dump   -> {"arrivals": {id: [t, ...]}, "requests": n, "unsigned": n, "samples": [...]}
  GET /_bench/reset  -> clears everything recorded

Run: python -m bench.delivery_receiver --port 8443 --cert cert.pem --key key.pem
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import signal
import ssl
import time
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

OK_RESPONSE = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
# Enough signed requests for the bench to check signatures without the receiver paying for every one.
SAMPLE_COUNT = 20
MAX_HEAD_BYTES = 64 * 1024


class Recorder:
    """What arrived since the last reset."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.arrivals: defaultdict[str, list[float]] = defaultdict(list)
        self.requests = 0
        self.unsigned = 0
        self.samples: list[dict[str, str]] = []

    def record(self, headers: dict[bytes, bytes], body: bytes, at: float) -> None:
        self.requests += 1
        webhook_id = headers.get(b"x-webhook-id", b"").decode("latin-1")
        self.arrivals[webhook_id].append(at)
        signature = headers.get(b"x-webhook-signature")
        if signature is None:
            self.unsigned += 1
        elif len(self.samples) < SAMPLE_COUNT:
            self.samples.append(
                {
                    "id": webhook_id,
                    "signature": signature.decode("latin-1"),
                    "timestamp": headers.get(b"x-webhook-timestamp", b"").decode("latin-1"),
                    "user_agent": headers.get(b"user-agent", b"").decode("latin-1"),
                    "body": body.decode("utf-8", errors="replace"),
                }
            )

    def control(self, path: str) -> dict[str, Any]:
        if path == "/_bench/reset":
            self.reset()
            return {"reset": True}
        if path == "/_bench/dump":
            return {
                "arrivals": self.arrivals,
                "requests": self.requests,
                "unsigned": self.unsigned,
                "samples": self.samples,
            }
        return {"requests": self.requests}


def _parse_head(head: bytes) -> tuple[bytes, dict[bytes, bytes]] | None:
    """The request target and the lower-cased headers; None when the head is not HTTP/1.1 we can read."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        return None
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            return None
        headers[name.strip().lower()] = value.strip()
    return parts[1], headers


class WebhookProtocol(asyncio.Protocol):
    """One connection: requests are handled as soon as their body is complete, in order."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        # Stamped once per read, before parsing: the moment the request was complete on our side.
        at = time.monotonic()
        self.buffer += data
        while self.transport is not None and self._handle_one(at):
            pass

    def _handle_one(self, at: float) -> bool:
        """Answers the first complete request in the buffer; False when it needs more bytes."""
        assert self.transport is not None
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD_BYTES:
                self._fail()
            return False
        parsed = _parse_head(bytes(self.buffer[:end]))
        if parsed is None:
            self._fail()
            return False
        target, headers = parsed
        try:
            length = int(headers.get(b"content-length", b"0"))
        except ValueError:
            self._fail()
            return False
        total = end + 4 + length
        if len(self.buffer) < total:
            return False
        body = bytes(self.buffer[end + 4 : total])
        del self.buffer[:total]
        self._respond(target, headers, body, at)
        return True

    def _respond(self, target: bytes, headers: dict[bytes, bytes], body: bytes, at: float) -> None:
        assert self.transport is not None
        if target.startswith(b"/_bench/"):
            answer = json.dumps(self.recorder.control(target.decode())).encode()
            self.transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer)
                + answer
            )
        else:
            self.recorder.record(headers, body, at)
            self.transport.write(OK_RESPONSE)
        if headers.get(b"connection", b"").lower() == b"close":
            self.transport.close()
            self.transport = None

    def _fail(self) -> None:
        assert self.transport is not None
        self.transport.write(BAD_REQUEST)
        self.transport.close()
        self.transport = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


# --- The bench's side -----------------------------------------------------------------


@dataclass(frozen=True)
class Dump:
    arrivals: dict[str, list[float]]  # X-Webhook-Id -> monotonic arrival times, one per request
    requests: int
    unsigned: int
    samples: list[dict[str, str]]

    def first_arrivals(self, ids: Collection[str]) -> dict[str, float]:
        return {webhook_id: min(self.arrivals[webhook_id]) for webhook_id in ids if webhook_id in self.arrivals}

    def duplicates(self, ids: Collection[str]) -> int:
        """Requests beyond the first for each of ``ids``: deliveries a receiver would have to deduplicate."""
        return sum(len(self.arrivals[webhook_id]) - 1 for webhook_id in ids if webhook_id in self.arrivals)

    def strangers(self, ids: Collection[str]) -> int:
        """Requests for ids the bench did not ask for in this phase (left over from an earlier one)."""
        wanted = set(ids)
        return sum(len(times) for webhook_id, times in self.arrivals.items() if webhook_id not in wanted)


class ReceiverClient:
    """Asks the receiver process what arrived, over one kept-alive TLS connection."""

    def __init__(self, port: int, ca_file: str) -> None:
        self._port = port
        self._context = ssl.create_default_context(cafile=ca_file)
        self._connection: http.client.HTTPSConnection | None = None

    def _get(self, path: str) -> dict[str, Any]:
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = http.client.HTTPSConnection("127.0.0.1", self._port, context=self._context)
            try:
                self._connection.request("GET", path)
                return json.loads(self._connection.getresponse().read())
            except (OSError, http.client.HTTPException):
                self._connection.close()
                self._connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def count(self) -> int:
        return int(self._get("/_bench/count")["requests"])

    def reset(self) -> None:
        self._get("/_bench/reset")

    def dump(self) -> Dump:
        return Dump(**self._get("/_bench/dump"))

    def wait_for(
        self, ids: Collection[str], *, stall_seconds: float, start_grace: float = 0.0, poll: float = 0.05
    ) -> Dump:
        """Waits until every one of ``ids`` arrived, or nothing new arrived for ``stall_seconds``.

        ``start_grace`` gives a worker that is still starting longer before its first arrival than between two.
        """
        last_count, last_change = self.count(), time.monotonic() + start_grace
        while True:
            count = self.count()
            if count != last_count:
                last_count, last_change = count, time.monotonic()
            if count >= len(ids):
                dump = self.dump()
                if all(webhook_id in dump.arrivals for webhook_id in ids):
                    return dump
            if time.monotonic() - last_change > stall_seconds:
                return self.dump()
            time.sleep(poll)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


# --- The receiver process ----------------------------------------------------------------


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def serve(port: int, context: ssl.SSLContext) -> None:
    loop = asyncio.get_running_loop()
    recorder = Recorder()
    stop = loop.create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
    server = await loop.create_server(
        lambda: WebhookProtocol(recorder), "127.0.0.1", port, ssl=context, backlog=1024, reuse_address=True
    )
    async with server:
        await stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, tls_context(args.cert, args.key)))


if __name__ == "__main__":
    main()
