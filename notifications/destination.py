"""Where a job goes, as the jobs list shows it and filters by it (docs/rules.md, "Listing jobs")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from notifications.models import JobType


def job_destination(job_type: str, payload: Mapping[str, Any]) -> str:
    """An email's recipient, or a webhook URL's host, in lower case: addresses and host names compare without case.

    A webhook's stored URL has its credentials masked (``https://***@host/``); the host is after them.
    """
    if job_type == JobType.EMAIL:
        return str(payload["to"]).lower()
    return urlsplit(str(payload["url"])).hostname or ""
