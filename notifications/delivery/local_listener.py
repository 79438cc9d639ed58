"""The receiver ``manage.py listen`` runs, as the webhook client of a local run sees it (docs/operations.md).

listen keeps its CA in ``VAR_DIR/listen/ca.pem`` and, while it runs, a record of the port it serves on
127.0.0.1 and of its process in ``VAR_DIR/listen/listener.json``. Where ``WEBHOOK_TRUST_LISTENER`` is on (embedded
or DEBUG runs, never a deployment) the webhook client trusts that CA and may connect to 127.0.0.1 at that port, and
to no other non-public address, while that process lives: a record left by a listen that was killed admits
nothing, whatever has taken the port since. A worker started before listen finds it within a second: the record's
mtime and the process are looked at no more than once a second, so a delivery does not pay for a stat.
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
class Listener:
    port: int
    ca_file: str
    # When this run of listen published itself (the record's mtime): with it, a new run, perhaps with a
    # new CA in the same file, makes a new key for the webhook client's session cache.
    started_ns: int
    pid: int

    def admits(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int | None) -> bool:
        return address == LOOPBACK and port == self.port


def listener_url(port: int) -> str:
    return f"https://{LOOPBACK}:{port}/"


def listen_dir() -> Path:
    return Path(settings.VAR_DIR) / "listen"


def ca_path() -> Path:
    return listen_dir() / "ca.pem"


def _record_path() -> Path:
    return listen_dir() / "listener.json"


# (checked at, record path, its mtime in ns or None when absent, what it said): replaced whole, so the
# worker's threads may race on it harmlessly.
_seen: tuple[float, Path | None, int | None, Listener | None] = (float("-inf"), None, None, None)


def current_listener() -> Listener | None:
    """The running listener this process may deliver to; always None where the setting is off."""
    global _seen
    if not settings.WEBHOOK_TRUST_LISTENER:
        return None
    checked_at, seen_path, seen_mtime, listener = _seen
    now, path = time.monotonic(), _record_path()
    if path == seen_path and now - checked_at < RECHECK_SECONDS:
        return listener
    mtime = _mtime_ns(path)
    if path != seen_path or mtime != seen_mtime:
        listener = _read(path, mtime) if mtime is not None else None
    if listener is not None and not _alive(listener.pid):
        listener = None
    _seen = (now, path, mtime, listener)
    return listener


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


def _read(path: Path, mtime: int) -> Listener | None:
    try:
        record = json.loads(path.read_text())
        port, pid = int(record["port"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Listener(port=port, ca_file=str(ca_path()), started_ns=mtime, pid=pid)


def listener_publish(*, port: int) -> None:
    """Records this process as the running listener, its CA already in :func:`ca_path`.

    Written whole, then renamed into place: a reader never sees half a record.
    """
    path = _record_path()
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps({"port": port, "pid": os.getpid()}))
    os.replace(partial, path)


def listener_withdraw() -> None:
    """Removes the record if it is still this process's: a listen started since has taken its place."""
    path = _record_path()
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass
