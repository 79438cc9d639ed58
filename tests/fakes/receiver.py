"""A customer's webhook endpoint: a real local HTTPS server that records what arrives.

Responses are scripted per path (status, headers, body, delay, or a dropped connection); once the
script for a path runs out, it answers with the path's standing reply if one is set, else 200.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import trustme

from tests.fakes.connections import CountingServer, server_tls


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b'{"ok":true}'
    delay: float = 0.0
    # Close the connection without answering.
    drop: bool = False
    # Sent after Content-Type and Content-Length.
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Arrival:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.time)


class Receiver:
    def __init__(self, ca: trustme.CA) -> None:
        self.arrivals: list[Arrival] = []
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._standing: dict[str, Reply] = {}
        self._arrived = threading.Condition()
        self._server = CountingServer(("127.0.0.1", 0), self._handler_class())
        self._server.socket = server_tls(ca).wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        # A client keeping a connection must not reach a stopped receiver through it.
        self._server.hang_up()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def connections(self) -> int:
        """TCP connections accepted so far: fewer than requests when the client keeps them."""
        return self._server.connections

    def url(self, path: str = "/hook") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def script(self, path: str, *replies: Reply) -> None:
        self._scripts[path].extend(replies)

    def answer_always(self, path: str, reply: Reply) -> None:
        """Every request to ``path`` gets ``reply`` once the path's script has run out (a slow endpoint, say)."""
        self._standing[path] = reply

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Arrival]:
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.arrivals) >= count, timeout)
            return list(self.arrivals)

    def _reply_for(self, path: str) -> Reply:
        script = self._scripts[path]
        return script.popleft() if script else self._standing.get(path, Reply())

    def _record(self, arrival: Arrival) -> None:
        with self._arrived:
            self.arrivals.append(arrival)
            self._arrived.notify_all()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: without TCP_NODELAY the body waits for the client's
            # delayed ACK (40 ms on Linux), as no production web server would make it wait.
            disable_nagle_algorithm = True

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if len(body) < length:
                    # The sender went away mid-request (a worker killed while sending): no endpoint's application
                    # would see a request cut short, so it is not an arrival.
                    self.close_connection = True
                    return
                path = self.path
                receiver._record(Arrival(self.command, path, dict(self.headers.items()), body))
                reply = receiver._reply_for(path)
                time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)

            do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
