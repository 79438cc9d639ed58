"""The suppression list over the API: `GET/POST /api/v1/suppressions`, `DELETE /api/v1/suppressions/<email>`."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from suppressions.models import Suppression, SuppressionReason
from tests.clients import APIClient
from tests.conftest import Client

pytestmark = pytest.mark.django_db


def suppress(client: Client, email: str, **fields: Any) -> Suppression:
    return Suppression.objects.create(account=client.account, email=email, reason=SuppressionReason.MANUAL, **fields)


def test_adding_an_address_answers_201_with_the_entry_and_stores_it_in_lower_case(startup: Client) -> None:
    response = startup.post("/api/v1/suppressions", {"email": "Ada@Example.com"})

    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert data.pop("createdAt").endswith("Z")
    assert data == {"email": "ada@example.com", "reason": "MANUAL", "provider": None, "jobId": None, "topic": None}
    stored = Suppression.objects.get(account=startup.account)
    assert (stored.email, stored.reason, stored.provider, stored.job_id) == ("ada@example.com", "MANUAL", None, None)
    assert stored.topic is None


def test_an_address_on_the_list_in_any_case_is_a_409(startup: Client) -> None:
    suppress(startup, "ada@example.com")

    response = startup.post("/api/v1/suppressions", {"email": "ADA@example.com"})

    assert response.status_code == 409
    assert response.json()["error"] == "Address is already suppressed"
    assert response.json()["code"] == "address_suppressed"
    assert Suppression.objects.filter(account=startup.account).count() == 1


@pytest.mark.parametrize("body", [{"email": "not an address"}, {"email": 42}, {}, {"email": "ada@localhost"}])
def test_an_invalid_or_missing_address_is_a_400(startup: Client, body: dict[str, Any]) -> None:
    response = startup.post("/api/v1/suppressions", body)

    assert response.status_code == 400
    assert response.json()["error"] == "email must be an email"
    assert not Suppression.objects.exists()


def test_the_list_is_the_accounts_own_newest_first_with_its_pagination(startup: Client, make_client: Any) -> None:
    now = timezone.now()
    job_id = uuid.uuid4()
    Suppression.objects.create(
        account=startup.account,
        email="bounced@example.com",
        reason=SuppressionReason.HARD_BOUNCE,
        provider="POSTMARK",
        job_id=job_id,
        created_at=now - timedelta(minutes=1),
    )
    suppress(startup, "manual@example.com", created_at=now)
    other = make_client("startup")
    suppress(other, "someone-else@example.com")

    response = startup.get("/api/v1/suppressions")

    assert response.status_code == 200
    page = response.json()["data"]
    assert [entry["email"] for entry in page["data"]] == ["manual@example.com", "bounced@example.com"]
    assert page["data"][1] == {
        "email": "bounced@example.com",
        "reason": "HARD_BOUNCE",
        "provider": "POSTMARK",
        "jobId": str(job_id),
        "topic": None,
        "createdAt": page["data"][1]["createdAt"],
    }
    assert page["pagination"] == {"page": 1, "limit": 20, "total": 2, "totalPages": 1}


def test_the_list_filters_by_address_without_case_and_by_reason_and_pages(startup: Client) -> None:
    for number in range(3):
        suppress(startup, f"user{number}@example.com")
    Suppression.objects.create(account=startup.account, email="spam@example.com", reason="SPAM_REPORT")

    by_address = startup.get("/api/v1/suppressions", email="USER1@example.com").json()["data"]
    by_reason = startup.get("/api/v1/suppressions", reason="SPAM_REPORT").json()["data"]
    second_page = startup.get("/api/v1/suppressions", limit="2", page="2").json()["data"]

    assert [entry["email"] for entry in by_address["data"]] == ["user1@example.com"]
    assert [entry["email"] for entry in by_reason["data"]] == ["spam@example.com"]
    assert len(second_page["data"]) == 2
    assert second_page["pagination"] == {"page": 2, "limit": 2, "total": 4, "totalPages": 2}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"reason": "BOUNCED"}, "reason must be one of HARD_BOUNCE, SPAM_REPORT, UNSUBSCRIBED, MANUAL"),
        ({"email": "nope"}, "email must be an email"),
        ({"page": "0"}, "page must be a positive integer"),
    ],
)
def test_a_bad_query_is_a_400_naming_the_parameter(startup: Client, query: dict[str, str], message: str) -> None:
    response = startup.get("/api/v1/suppressions", **query)

    assert response.status_code == 400
    assert response.json()["error"] == message


def test_removing_an_address_answers_200_and_forgets_it(startup: Client) -> None:
    suppress(startup, "ada@example.com")

    response = startup.delete("/api/v1/suppressions/Ada@Example.com")

    assert response.status_code == 200
    assert response.json()["data"] == {
        "email": "ada@example.com",
        "message": "Address removed from the suppression list",
    }
    assert not Suppression.objects.exists()


def test_removing_an_unknown_or_another_accounts_address_is_a_404(startup: Client, make_client: Any) -> None:
    other = make_client("startup")
    suppress(other, "ada@example.com")

    for address in ("ada@example.com", "nobody@example.com"):
        response = startup.delete(f"/api/v1/suppressions/{address}")
        assert response.status_code == 404
        assert (response.json()["error"], response.json()["code"]) == ("Suppression not found", "suppression_not_found")
    assert Suppression.objects.filter(account=other.account, email="ada@example.com").exists()


def test_the_list_needs_an_api_key(startup: Client) -> None:
    for response in (
        APIClient().get("/api/v1/suppressions"),
        APIClient().post("/api/v1/suppressions", {"email": "ada@example.com"}, format="json"),
        APIClient().delete("/api/v1/suppressions/ada@example.com"),
    ):
        assert response.status_code == 401
        assert response.json()["error"] == "API key is missing"


@pytest.mark.parametrize("address", ["ada\0@example.com", "\0", "ada@example.com\0"])
def test_removing_an_address_with_a_nul_is_a_404_as_for_any_other_not_listed(startup: Client, address: str) -> None:
    suppress(startup, "ada@example.com")

    response = startup.delete(f"/api/v1/suppressions/{quote(address, safe='@')}")

    assert response.status_code == 404
    assert (response.json()["error"], response.json()["code"]) == ("Suppression not found", "suppression_not_found")
    assert Suppression.objects.filter(account=startup.account).count() == 1


@pytest.mark.parametrize("path", ["a%2Fb/c@example.com", "a/b/c@example.com", "A%2FB%2Fc@Example.com"])
def test_an_address_with_a_slash_is_removed_whether_or_not_the_slash_is_escaped(startup: Client, path: str) -> None:
    suppress(startup, "a/b/c@example.com")
    suppress(startup, "c@example.com")

    response = startup.delete(f"/api/v1/suppressions/{path}")

    assert response.status_code == 200, response.json()
    assert response.json()["data"]["email"] == "a/b/c@example.com"
    assert list(Suppression.objects.values_list("email", flat=True)) == ["c@example.com"]


# --- Topics (docs/suppressions.md, "Topics") ----------------------------------------------------------------------


def test_an_address_is_added_for_one_topic_beside_its_entry_for_every_email(startup: Client) -> None:
    suppress(startup, "ada@example.com")

    response = startup.post("/api/v1/suppressions", {"email": "Ada@example.com", "topic": "weekly-digest"})

    assert response.status_code == 201, response.json()
    assert response.json()["data"]["topic"] == "weekly-digest"
    stored = Suppression.objects.filter(account=startup.account).order_by("id")
    assert [(entry.email, entry.topic) for entry in stored] == [
        ("ada@example.com", None),
        ("ada@example.com", "weekly-digest"),
    ]


def test_the_same_address_and_topic_twice_is_a_409_and_so_is_every_email_twice(startup: Client) -> None:
    assert startup.post("/api/v1/suppressions", {"email": "ada@example.com", "topic": "news"}).status_code == 201
    assert startup.post("/api/v1/suppressions", {"email": "ada@example.com"}).status_code == 201

    again_topic = startup.post("/api/v1/suppressions", {"email": "ADA@example.com", "topic": "news"})
    again_every = startup.post("/api/v1/suppressions", {"email": "ADA@example.com"})

    for response in (again_topic, again_every):
        assert response.status_code == 409
        assert response.json()["error"] == "Address is already suppressed"
    assert Suppression.objects.filter(account=startup.account).count() == 2


def test_the_database_keeps_one_entry_for_every_email_per_address(startup: Client) -> None:
    account = startup.account
    Suppression.objects.create(account=account, email="ada@example.com", reason="MANUAL")
    with pytest.raises(IntegrityError), transaction.atomic():
        Suppression.objects.create(account=account, email="ada@example.com", reason="HARD_BOUNCE")
    Suppression.objects.create(account=account, email="ada@example.com", topic="news", reason="MANUAL")
    with pytest.raises(IntegrityError), transaction.atomic():
        Suppression.objects.create(account=account, email="ada@example.com", topic="news", reason="UNSUBSCRIBED")


@pytest.mark.parametrize("topic", ["Weekly", "", "a" * 65, "week ly", 7, None, "digest/1"])
def test_a_bad_topic_is_a_400_naming_the_field(startup: Client, topic: Any) -> None:
    response = startup.post("/api/v1/suppressions", {"email": "ada@example.com", "topic": topic})

    assert response.status_code == 400
    assert response.json()["error"] == "topic must be 1 to 64 of a-z, 0-9, _ and -"
    assert not Suppression.objects.exists()


def test_the_list_filters_by_topic(startup: Client) -> None:
    suppress(startup, "ada@example.com")
    suppress(startup, "ada@example.com", topic="news")
    suppress(startup, "grace@example.com", topic="digest")

    page = startup.get("/api/v1/suppressions", topic="news").json()["data"]

    assert [(entry["email"], entry["topic"]) for entry in page["data"]] == [("ada@example.com", "news")]
    refused = startup.get("/api/v1/suppressions", topic="NEWS")
    assert refused.status_code == 400
    assert refused.json()["error"] == "topic must be 1 to 64 of a-z, 0-9, _ and -"


def test_removing_with_a_topic_takes_that_entry_and_without_one_the_entry_for_every_email(startup: Client) -> None:
    suppress(startup, "ada@example.com")
    suppress(startup, "ada@example.com", topic="news")

    by_topic = startup.delete("/api/v1/suppressions/ada@example.com?topic=news")
    assert by_topic.status_code == 200, by_topic.json()
    assert list(Suppression.objects.values_list("topic", flat=True)) == [None]
    assert startup.delete("/api/v1/suppressions/ada@example.com?topic=news").status_code == 404

    assert startup.delete("/api/v1/suppressions/ada@example.com").status_code == 200
    assert not Suppression.objects.exists()


def test_removing_without_a_topic_leaves_the_topics_entries(startup: Client) -> None:
    suppress(startup, "ada@example.com", topic="news")

    response = startup.delete("/api/v1/suppressions/ada@example.com")

    assert response.status_code == 404
    assert response.json()["error"] == "Suppression not found"
    assert Suppression.objects.filter(topic="news").exists()
    bad = startup.delete("/api/v1/suppressions/ada@example.com?topic=No%20Such")
    assert bad.status_code == 400
    assert bad.json()["error"] == "topic must be 1 to 64 of a-z, 0-9, _ and -"
