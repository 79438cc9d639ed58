"""A local HTTP server in front of the live NotifyHub, as a load balancer would stand there: it forwards each request
and its answer, unless a turn scripted for that request says otherwise: refuse it without forwarding (a 429 or 503 of
its own), forward it and lose the answer (answering 503 instead), or forward it, or not, and never answer.

It records what it was sent, so a test sees each attempt a client made. Until ``start`` it holds its port without
listening: a connection to it is refused, as to a server not up yet.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# The API's own answers for these statuses (docs/errors.md).
ENVELOPES = {
    429: {"success": False, "error": "Rate limit exceeded", "code": "rate_limited"},
    503: {"success": False, "error": "Service temporarily unavailable", "code": "service_unavailable"},
}
FORWARDED_HEADERS = ("x-api-key", "authorization", "content-type", "accept", "user-agent")
# Longer than any client timeout the tests set: a hung turn outlasts the client's patience.
HANG_SECONDS = 3.0


@dataclass(frozen=True)
class Turn:
    """What the proxy does with one request."""

    forward: bool = True
    # Its own answer's status and headers; None: the upstream's answer.
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


def refuse(status: int, **headers: str) -> Turn:
    return Turn(forward=False, status=status, headers={name.replace("_", "-"): v for name, v in headers.items()})


def lose_answer(status: int = 503) -> Turn:
    return Turn(forward=True, status=status)


def hang(*, forward: bool) -> Turn:
    return Turn(forward=forward, hang=True)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    # By lower-case name.
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Proxy:
    def __init__(self, upstream: str) -> None:
        self.seen: list[Seen] = []
        self._upstream = urlsplit(upstream)
        self._turns: deque[Turn] = deque()
        self._serving = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class(), bind_and_activate=False)
        self._server.daemon_threads = True
        self._server.server_bind()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *turns: Turn) -> None:
        self._turns.extend(turns)

    def start(self, *, after: float = 0.0) -> None:
        """Listens ``after`` seconds from now; until then connections are refused."""
        threading.Thread(target=self._serve, args=(after,), daemon=True).start()

    def stop(self) -> None:
        if self._serving.is_set():  # shutdown() waits for serve_forever(), which may never have started
            self._server.shutdown()
        self._server.server_close()

    def _serve(self, after: float) -> None:
        time.sleep(after)
        self._server.server_activate()
        self._serving.set()
        self._server.serve_forever(poll_interval=0.05)

    def _next_turn(self) -> Turn:
        return self._turns.popleft() if self._turns else Turn()

    def _forward(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        upstream = http.client.HTTPConnection(self._upstream.hostname or "", self._upstream.port, timeout=10)
        try:
            headers = {name: seen.headers[name] for name in FORWARDED_HEADERS if name in seen.headers}
            upstream.request(seen.method, seen.path, body=seen.body, headers=headers)
            answer = upstream.getresponse()
            kept = {name: value for name in ("Content-Type", "Retry-After") if (value := answer.getheader(name))}
            return answer.status, kept, answer.read()
        finally:
            upstream.close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received = {name.lower(): value for name, value in self.headers.items()}
                seen = Seen(self.command, self.path, received, self.rfile.read(length))
                proxy.seen.append(seen)
                turn = proxy._next_turn()
                status, headers, body = proxy._forward(seen) if turn.forward else (0, {}, b"")
                if turn.hang:
                    time.sleep(HANG_SECONDS)
                    self.close_connection = True
                    return
                if turn.status is not None:
                    status, headers = turn.status, {"Content-Type": "application/json", **turn.headers}
                    body = json.dumps(ENVELOPES[turn.status]).encode()
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
