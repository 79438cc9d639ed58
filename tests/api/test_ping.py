from __future__ import annotations

import re

from tests.conftest import Client

ISO_MILLIS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def test_it_answers_pong_in_the_envelope(free: Client) -> None:
    response = free.get("/api/v1/ping")

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert body["data"]["message"] == "pong"
    assert ISO_MILLIS.fullmatch(body["timestamp"])
    assert ISO_MILLIS.fullmatch(body["data"]["timestamp"])
