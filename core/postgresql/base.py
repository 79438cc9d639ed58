"""Django's PostgreSQL backend with a connection health check that needs no round trip.

With CONN_HEALTH_CHECKS, Django checks a persistent connection before the first query of every
request and task by sending ``SELECT 1``: a round trip, and a statement for the server to run,
on every request of the accept path (docs/departures.md).

A persistent connection goes bad when the server ends it (a restart or shutdown,
``pg_terminate_backend``, an idle timeout) or when the network drops it. When the server ends a
connection it sends a FATAL error and closes the socket, so the idle connection's socket becomes
readable, and a zero-timeout poll sees that without a round trip. A silent network drop is
caught by neither check until TCP gives up: ``SELECT 1`` would wait as long as the first real
query does.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg.pq import ConnStatus


# Off the framework's road: docs/departures.md, "postgres-health-check".
class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        """False when the server has closed the connection or sent it anything while idle.

        Between queries libpq has read every reply up to ReadyForQuery, so an idle connection
        has nothing to read. Anything the server sends unasked also condemns it: a notice, a
        parameter change after a configuration reload. That costs one reconnect, never a
        failed query.
        """
        if self.connection is None or self.connection.closed:
            return False
        pgconn = self.connection.pgconn
        if pgconn.status != ConnStatus.OK:
            return False
        poller = select.poll()
        poller.register(pgconn.socket, select.POLLIN)
        return not poller.poll(0)
