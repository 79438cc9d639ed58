"""What the fake servers share about connections: counting those accepted, hanging up, speaking TLS.

A test asserts connection reuse where it shows, at the server: ``connections`` counts every TCP
connection accepted, and ``hang_up`` closes those still open, as a server's idle timeout does.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any

import trustme


def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    """A server context with a certificate for 127.0.0.1 and localhost that ``ca`` issued."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


class CountingServer(ThreadingHTTPServer):
    """Counts accepted connections, and with ``tls`` set wraps each one, its handshake in the connection's thread
    so that a slow client holds up no other."""

    daemon_threads = True
    tls: ssl.SSLContext | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.connections = 0
        self._open: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        with self._connections_lock:
            self.connections += 1
            self._open.add(sock)
        return sock, address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is not None:
            request.do_handshake()
        super().finish_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> None:
        """Closes every connection still open; a handler waiting for its next request reads the end."""
        with self._connections_lock:
            still_open = list(self._open)
        for sock in still_open:
            # socket.socket's own shutdown: SSLSocket's would also drop the TLS state a handler is reading. OSError:
            # the connection closed meanwhile.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up or went away (a timeout, a worker killed, a hang-up) is expected, not a failure of
        # the server: no traceback for it.
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)
