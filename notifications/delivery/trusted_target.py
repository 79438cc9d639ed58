"""The one local receiver a run for trying things may deliver to, as the webhook client sees it (docs/operations.md).

Where ``WEBHOOK_LOCAL_TARGET_FILE`` is set (embedded or DEBUG runs, never a deployment) a process serving HTTPS on
127.0.0.1 may publish itself there: a JSON record of its port, its process id and the CA its certificate comes from
(``manage.py listen`` does, docs/architecture.md "devtools/"). The webhook client then trusts that CA and may
connect to 127.0.0.1 at that port, and to no other non-public address, while that process lives: a record left by
a process that was killed admits nothing, whatever has taken the port since. A worker started before the target
finds it within a second: the record's mtime and the process are looked at no more than once a second, so a
delivery does not pay for a stat.

The client only reads the record: what publishes it is no concern of ``notifications``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")
RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class TrustedTarget:
    port: int
    ca_file: str
    # When the target published itself (the record's mtime): with it, a new run, perhaps with a new CA in the same
    # file, makes a new key for the webhook client's session cache.
    started_ns: int
    pid: int

    def admits(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int | None) -> bool:
        return address == LOOPBACK and port == self.port


# (checked at, record path, its mtime in ns or None when absent, what it said): replaced whole, so the
# worker's threads may race on it harmlessly.
_seen: tuple[float, Path | None, int | None, TrustedTarget | None] = (float("-inf"), None, None, None)


def current_trusted_target() -> TrustedTarget | None:
    """The running trusted local target this process may deliver to; always None where the setting is unset."""
    global _seen
    if settings.WEBHOOK_LOCAL_TARGET_FILE is None:
        return None
    checked_at, seen_path, seen_mtime, target = _seen
    now, path = time.monotonic(), Path(settings.WEBHOOK_LOCAL_TARGET_FILE)
    if path == seen_path and now - checked_at < RECHECK_SECONDS:
        return target
    mtime = _mtime_ns(path)
    if path != seen_path or mtime != seen_mtime:
        target = _read(path, mtime) if mtime is not None else None
    if target is not None and not _alive(target.pid):
        target = None
    _seen = (now, path, mtime, target)
    return target


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0 asks whether the process exists, and delivers nothing
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def _mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def _read(path: Path, mtime: int) -> TrustedTarget | None:
    try:
        record = json.loads(path.read_text())
        port, pid, ca_file = int(record["port"]), int(record["pid"]), record["ca_file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(ca_file, str):
        return None
    return TrustedTarget(port=port, ca_file=ca_file, started_ns=mtime, pid=pid)
