"""The customer's webhook endpoint for the delivery bench: one asyncio process, HTTPS, keep-alive, cheap per request.

It answers every request 200 and records its X-Webhook-Id and arrival time (``time.monotonic()``: one clock for every
process on Linux, so the bench can subtract the moment its client read a 202). The bench asks over the same port:
GET /_bench/count, /_bench/dump (arrivals, unsigned count, 20 signed samples with their path and both schemes'
headers) and /_bench/reset. With ``--close`` it answers each delivery with ``Connection: close`` and hangs up, so that
every delivery opens a new connection, as to an endpoint that keeps none. With ``--by-path`` it records each arrival
under its id and path (``arrival_key``): a message's deliveries to its endpoints share one X-Webhook-Id, the message's.
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
from typing import Any

OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
OK_CLOSE = (
    b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
)


def arrival_key(webhook_id: str, path: str) -> str:
    """What a receiver started with ``--by-path`` records a delivery under."""
    return f"{webhook_id} {path}"


class Recorder:
    def __init__(self, *, by_path: bool = False) -> None:
        self.by_path = by_path
        self.reset()

    def reset(self) -> dict[str, Any]:
        self.arrivals: defaultdict[str, list[float]] = defaultdict(list)
        self.requests = self.unsigned = 0
        self.samples: list[dict[str, str]] = []
        return {}

    def record(self, path: str, headers: dict[bytes, bytes], body: bytes) -> None:
        self.requests += 1
        webhook_id = headers.get(b"x-webhook-id", b"").decode("latin-1")
        self.arrivals[arrival_key(webhook_id, path) if self.by_path else webhook_id].append(time.monotonic())
        signature = headers.get(b"x-webhook-signature")
        if signature is None:
            self.unsigned += 1
        elif len(self.samples) < 20:
            sample = {"signature": signature.decode("latin-1"), "body": body.decode("utf-8", "replace"), "path": path}
            # Standard Webhooks' headers, under their own names, for its library's verify().
            for name in (b"webhook-id", b"webhook-timestamp", b"webhook-signature"):
                sample[name.decode()] = headers.get(name, b"").decode("latin-1")
            self.samples.append(sample)

    def control(self, target: str) -> dict[str, Any]:
        if target == "/_bench/reset":
            return self.reset()
        if target == "/_bench/dump":
            return {"arrivals": self.arrivals, "unsigned": self.unsigned, "samples": self.samples}
        return {"requests": self.requests}


async def handle(
    recorder: Recorder, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, close: bool
) -> None:
    with contextlib.suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError, ValueError, IndexError):
        while True:
            lines = (await reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
            target = lines[0].split(b" ")[1].decode()
            headers = {name.strip().lower(): value.strip() for name, _, value in (x.partition(b":") for x in lines[1:])}
            body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
            if target.startswith("/_bench/"):
                answer = json.dumps(recorder.control(target)).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
            else:
                recorder.record(target, headers, body)
                writer.write(OK_CLOSE if close else OK)
                if close:
                    break
    writer.close()


async def serve(port: int, cert: str, key: str, *, close: bool, by_path: bool) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    recorder, stop = Recorder(by_path=by_path), asyncio.get_running_loop().create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
    server = await asyncio.start_server(
        lambda reader, writer: handle(recorder, reader, writer, close=close),
        "127.0.0.1",
        port,
        ssl=context,
        backlog=1024,
    )
    async with server:
        await stop


class Dump:
    def __init__(self, arrivals: dict[str, list[float]], unsigned: int, samples: list[dict[str, str]]) -> None:
        self.arrivals, self.unsigned, self.samples = arrivals, unsigned, samples

    def first_arrivals(self, ids: Collection[str]) -> dict[str, float]:
        return {webhook_id: min(self.arrivals[webhook_id]) for webhook_id in ids if webhook_id in self.arrivals}

    def duplicates(self, ids: Collection[str]) -> int:
        """Requests beyond the first for each of ``ids``: deliveries a receiver would have to deduplicate."""
        return sum(len(self.arrivals[webhook_id]) - 1 for webhook_id in ids if webhook_id in self.arrivals)


class ReceiverClient:
    """Asks the receiver process what arrived, over one kept-alive TLS connection."""

    def __init__(self, port: int, ca_file: str) -> None:
        context = ssl.create_default_context(cafile=ca_file)
        self._connection = http.client.HTTPSConnection("127.0.0.1", port, context=context)

    def _get(self, what: str) -> Any:
        self._connection.request("GET", f"/_bench/{what}")
        return json.loads(self._connection.getresponse().read())

    def reset(self) -> None:
        self._get("reset")

    def wait_for(self, ids: Collection[str], *, stall_seconds: float, start_grace: float = 0.0) -> Dump:
        """Waits until every one of ``ids`` arrived, or nothing new arrived for ``stall_seconds`` (``start_grace``
        gives a worker still starting longer before its first arrival)."""
        last_count, last_change = -1, time.monotonic() + start_grace
        while True:
            count = self._get("count")["requests"]
            if count != last_count:
                last_count, last_change = count, max(last_change, time.monotonic())
            if count >= len(ids):
                dump = Dump(**self._get("dump"))
                if all(webhook_id in dump.arrivals for webhook_id in ids):
                    return dump
            if time.monotonic() - last_change > stall_seconds:
                return Dump(**self._get("dump"))
            time.sleep(0.05)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("port", "cert", "key"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--close", action="store_true", help="hang up after each delivery")
    parser.add_argument("--by-path", action="store_true", help="record each arrival under its id and path")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(int(args.port), args.cert, args.key, close=args.close, by_path=args.by_path))
