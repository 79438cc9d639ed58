from __future__ import annotations

import json

from tests.clients import APIClient


def test_the_openapi_document_describes_the_api(db: None) -> None:
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in [
        "/api/v1/ping",
        "/api/v1/notifications/email",
        "/api/v1/notifications/webhook",
        "/api/v1/notifications/jobs",
        "/api/v1/notifications/jobs/{job_id}",
        "/api/v1/notifications/jobs/{job_id}/retry",
    ]:
        assert path in paths
    accepted = paths["/api/v1/notifications/webhook"]["post"]["responses"]["202"]["content"]["application/json"]
    assert set(accepted["schema"]["properties"]) == {"success", "data", "timestamp"}
    request_fields = paths["/api/v1/notifications/email"]["post"]["requestBody"]["content"]["application/json"]
    assert "from" in json.dumps(request_fields) or "from" in json.dumps(schema["components"])


def test_the_docs_page_is_served(db: None) -> None:
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
