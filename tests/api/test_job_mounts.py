"""Each job operation is one view, mounted for API clients under /api/v1/notifications/ and for the account holder
under /api/v1/user/: the two serve alike, and their documents differ only where the mount says."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.urls import resolve

from core.api.schema import ERROR_DESCRIPTIONS, SCOPE_REFUSED
from core.api.views import Mount, MountedView
from notifications.views.jobs import ACCOUNT_HOLDER, API_CLIENT, JobCancelView, JobDetailView, JobListView, JobRetryView
from tests.clients import APIClient

# Where each mount serves the job operations, and how its URL names begin.
MOUNTS = {API_CLIENT: ("/api/v1/notifications", ""), ACCOUNT_HOLDER: ("/api/v1/user", "user-")}
# Each operation: its view, its method, its path within a mount, and its URL name there.
OPERATIONS = [
    (JobListView, "get", "/jobs", "job-list"),
    (JobDetailView, "get", "/jobs/{job_id}", "job-detail"),
    (JobRetryView, "post", "/jobs/{job_id}/retry", "job-retry"),
    (JobCancelView, "post", "/jobs/{job_id}/cancel", "job-cancel"),
]
# Where the two mounts' operations may differ, by JSON pointer: the ids (the operation's and its links' targets'),
# the words, the tag (the first part of the mount's path), the session the holder's takes beside a key, and what
# "unauthenticated" and "forbidden" mean to each mount's callers.
MOUNT_SAYS = re.compile(
    r"/operationId|/summary|/description|/tags/0|/security/\d+/cookieAuth|/responses/40[13]/description"
    r"|/responses/200/links/\w+/operationId"
)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    response = APIClient().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def leaves(node: Any, pointer: str = "") -> dict[str, Any]:
    """Every value in a document by its JSON pointer; an empty object or list is a value of its own."""
    if isinstance(node, dict) and node:
        return {at: value for key, child in node.items() for at, value in leaves(child, f"{pointer}/{key}").items()}
    if isinstance(node, list) and node:
        return {
            at: value for index, child in enumerate(node) for at, value in leaves(child, f"{pointer}/{index}").items()
        }
    return {pointer: node}


def operation_at(schema: dict[str, Any], mount: Mount, path: str, method: str) -> dict[str, Any]:
    prefix, _ = MOUNTS[mount]
    return schema["paths"][prefix + path][method]


def link_targets(operation: dict[str, Any]) -> list[str]:
    return [
        link["operationId"] for answer in operation["responses"].values() for link in answer.get("links", {}).values()
    ]


@pytest.mark.parametrize(("view", "method", "path", "name"), OPERATIONS)
def test_each_job_operation_is_one_view_serving_both_mounts(
    view: type[MountedView], method: str, path: str, name: str
) -> None:
    job_id = "8d1f0a52-3c4e-4b8a-9f61-2a7d5e0c9b13"
    for mount, (prefix, name_prefix) in MOUNTS.items():
        match = resolve(prefix + path.replace("{job_id}", job_id))

        assert (match.func.cls, match.func.initkwargs["mount"], match.url_name) == (view, mount, name_prefix + name)


@pytest.mark.parametrize(("view", "method", "path", "name"), OPERATIONS)
def test_the_two_mounts_documents_differ_only_where_the_mount_says(
    schema: dict[str, Any], view: type[MountedView], method: str, path: str, name: str
) -> None:
    for_client = leaves(operation_at(schema, API_CLIENT, path, method))
    for_holder = leaves(operation_at(schema, ACCOUNT_HOLDER, path, method))

    differing = {at for at in for_client.keys() | for_holder.keys() if for_client.get(at) != for_holder.get(at)}

    assert [at for at in sorted(differing) if not MOUNT_SAYS.fullmatch(at)] == []


@pytest.mark.parametrize(("view", "method", "path", "name"), OPERATIONS)
@pytest.mark.parametrize("mount", list(MOUNTS))
def test_each_mounts_document_has_the_mounts_ids_words_and_error_meanings(
    schema: dict[str, Any], mount: Mount, view: type[MountedView], method: str, path: str, name: str
) -> None:
    operation = operation_at(schema, mount, path, method)
    ids = [operation["operationId"], *link_targets(operation)]
    meanings = {**ERROR_DESCRIPTIONS, **mount.error_descriptions}

    assert [operation_id for operation_id in ids if not operation_id.startswith(f"{mount.operation_prefix}_")] == []
    assert operation["summary"] == view.openapi.summary_at(mount)
    # Then the scopes of key that may call it (docs/rules.md, "API keys and scopes"), and that a test key may, as
    # the job operations serve a test key its own jobs (docs/rules.md, "Test mode").
    scopes = " or ".join(f"`{scope}`" for scope in sorted(view.key_scopes[method.upper()]))
    assert operation["description"] == (
        f"{view.openapi.description_at(mount)}\n\nAPI keys of scope {scopes} may call it. Test keys may call it too."
    )
    assert operation["x-api-key-modes"] == ["live", "test"]
    assert operation["responses"]["401"]["description"] == meanings[401].described()
    refused = meanings[403].described()
    if addition := view.openapi.error_additions.get(403):
        refused = addition.added_to(refused)
    assert operation["responses"]["403"]["description"] == SCOPE_REFUSED.added_to(refused)
