"""GET /api/v1/info: the service's name, its version from pyproject.toml, and where its API reference is."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.clients import APIClient

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def release() -> str:
    version: str = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    return version


def test_it_names_the_service_its_version_and_its_docs(db: None, settings: Any) -> None:
    settings.PUBLIC_URL = "https://notify.example.com/"

    response = APIClient().get("/api/v1/info")

    assert response.status_code == 200
    assert response.json()["data"] == {
        "name": "NotifyHub",
        "version": release(),
        "docs": "https://notify.example.com/api/docs/",
    }
    assert "set-cookie" not in response.headers


def test_the_docs_it_names_are_served(db: None) -> None:
    docs = APIClient().get("/api/v1/info").json()["data"]["docs"]

    assert APIClient().get(urlsplit(docs).path).status_code == 200


def test_the_openapi_document_gives_the_same_version(db: None) -> None:
    schema = json.loads(APIClient().get("/api/v1/schema/?format=json").content)

    assert schema["info"]["version"] == release()
