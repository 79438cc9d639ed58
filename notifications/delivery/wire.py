"""The bytes a webhook delivery sends."""

from __future__ import annotations

import json
from typing import Any


def json_bytes(data: Any) -> bytes:
    """The compact UTF-8 JSON of a payload: what is sent, so also what the 10kb cap measures."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
