"""The record ``manage.py listen`` keeps while it runs: its port, its process and its CA, in the file the webhook
client reads for a local target, ``WEBHOOK_LOCAL_TARGET_FILE`` (docs/operations.md, "Who delivers to it").

listen withdraws it when it stops. The client also trusts it only while the process it names lives, so a listen
that was killed, and withdrew nothing, leaves nothing trusted behind. The record is all the two share: the client
(``notifications/delivery/trusted_target.py``) and this app import nothing of each other (docs/architecture.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.conf import settings

from devtools.files import write_whole


def _record_path() -> Path | None:
    """None in a production configuration: its webhook client looks for no local target, so none is told."""
    path = settings.WEBHOOK_LOCAL_TARGET_FILE
    return None if path is None else Path(path)


def listener_publish(*, port: int, ca: Path) -> None:
    """Records this process, serving on 127.0.0.1 at ``port`` with a certificate from ``ca``, as the local target."""
    path = _record_path()
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"port": port, "pid": os.getpid(), "ca_file": str(ca.absolute())}
    write_whole(path, json.dumps(record).encode())


def listener_withdraw() -> None:
    """Removes the record if it is still this process's: a listen started since has taken its place."""
    path = _record_path()
    if path is None:
        return
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass
