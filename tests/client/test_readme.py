"""The README quick start's Python send, run as it is written against a live server: the same send as its curl
command (tests/test_readme_quick_start.py runs that one), read from README.md so that the two cannot drift."""

from __future__ import annotations

import re
from typing import Any

import pytest

from notifications.models import Job
from tests.client import sdk
from tests.conftest import Client
from tests.test_deploy import ROOT
from tests.test_readme_quick_start import KEY, LISTEN_URL, quick_start_commands, sent_webhook

SERVICE_URL = "http://127.0.0.1:8000"


def python_send() -> str:
    section = (ROOT / "README.md").read_text().split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```python\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)
    return str(block)


def test_the_quick_starts_python_send_is_its_curl_send(
    holder: Client, live_server: Any, settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True  # what make run allows for listen's address
    code = python_send()
    assert all(placeholder in code for placeholder in (KEY, SERVICE_URL, LISTEN_URL)), code
    runnable = code.replace(KEY, holder.api_key).replace(SERVICE_URL, live_server.url)

    exec(runnable.replace("from notifyhub import", f"from {sdk.NAME} import"), {})

    (job,) = Job.objects.filter(account=holder.account)
    assert capsys.readouterr().out == f"{job.id}\n"
    sent = sent_webhook(quick_start_commands())
    assert (job.payload["url"], job.payload["payload"]) == (sent["url"], sent["payload"])
