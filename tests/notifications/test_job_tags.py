"""An email's tags: their JobTag rows, written with the job by every way a job is stored, and the jobs list's `tag`
filter that reads them on both mounts (docs/rules.md, "Listing jobs")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account, UsagePeriod
from core.errors import DuplicateRequest, QuotaExceeded
from notifications.batches import batch_store
from notifications.models import Job, JobStatus, JobTag, JobType
from notifications.services import email_job_new, job_store
from suppressions.models import Suppression
from tests.api.test_envelope import assert_error
from tests.clients import APIClient
from tests.conftest import Client
from tests.factories import JobFactory
from tests.notifications.test_test_mode import with_test_key

JOBS = "/api/v1/notifications/jobs"
USER_JOBS = "/api/v1/user/jobs"
TAG_MESSAGE = "tag must be 1 to 64 of A-Z, a-z, 0-9, _ and -"


def tagged_email(account: Account, *tags: str, to: str = "user@example.com", **fields: Any) -> Job:
    payload = {"to": to, "subject": "Receipt", "body": "<p>Thanks</p>", "tags": list(tags)}
    return JobFactory(account=account, type=JobType.EMAIL, payload=payload, **fields)


def listed(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [job["id"] for job in response.json()["data"]["data"]]


def signed_in(client: Client) -> APIClient:
    """The account holder's session, for the holder's mount."""
    browser = APIClient()
    browser.force_login(client.account.user)
    return browser


def new_email(account: Account, *tags: str, to: str = "user@example.com", key: str | None = None) -> Job:
    """An email job as the send makes it, with ``tags`` in its payload as the send keeps them."""
    job = email_job_new(account=account, to=to, subject="Receipt", body="<p>Thanks</p>", idempotency_key=key)
    if tags:
        job.payload["tags"] = list(tags)
    return job


def statements(queries: CaptureQueriesContext) -> list[str]:
    """The statements that read or write, without the transactions' and savepoints' own."""
    control = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK")
    return [query["sql"] for query in queries if not query["sql"].startswith(control)]


def tag_rows(job: Job) -> list[tuple[str, Any]]:
    return list(JobTag.objects.filter(job=job).order_by("tag").values_list("tag", "created_at"))


@pytest.mark.django_db
class TestTheTagFilter:
    def test_it_finds_every_email_sent_with_the_tag_newest_first_on_both_mounts(
        self, free: Client, make_client: Callable[..., Client]
    ) -> None:
        first = tagged_email(free.account, "welcome", "onboarding")
        tagged_email(free.account, "receipt")
        second = tagged_email(free.account, "onboarding", to="grace@example.com")
        tagged_email(free.account, "Onboarding")  # a tag's case counts
        JobFactory(account=free.account, type=JobType.EMAIL)
        JobFactory(account=free.account)
        tagged_email(make_client().account, "onboarding")  # another account's

        by_key = listed(free.get(JOBS, tag="onboarding"))
        by_key_on_the_holders_mount = listed(free.get(USER_JOBS, tag="onboarding"))
        by_session = listed(signed_in(free).get(USER_JOBS, {"tag": "onboarding"}))

        assert by_key == by_key_on_the_holders_mount == by_session == [str(second.id), str(first.id)]
        assert listed(free.get(JOBS, tag="welcome")) == [str(first.id)]
        assert listed(free.get(JOBS, tag="unused")) == []

    def test_it_combines_with_the_type_status_and_to_filters(self, free: Client) -> None:
        wanted = tagged_email(free.account, "billing", status=JobStatus.FAILED, to="ada@example.com")
        tagged_email(free.account, "billing", status=JobStatus.COMPLETED, to="ada@example.com")
        tagged_email(free.account, "billing", status=JobStatus.FAILED, to="grace@example.com")
        tagged_email(free.account, "other", status=JobStatus.FAILED, to="ada@example.com")

        response = free.get(JOBS, tag="billing", type="email", status="failed", to="ADA@example.com")

        assert listed(response) == [str(wanted.id)]
        assert response.json()["data"]["pagination"]["total"] == 1
        assert listed(free.get(JOBS, tag="billing", type="webhook")) == []

    def test_it_pages_with_the_total_of_the_tags_jobs(self, free: Client) -> None:
        jobs = [tagged_email(free.account, "digest", "weekly") for _ in range(5)]
        tagged_email(free.account, "weekly")

        data = free.get(USER_JOBS, tag="digest", page="2", limit="2").json()["data"]

        assert [job["id"] for job in data["data"]] == [str(jobs[2].id), str(jobs[1].id)]
        assert data["pagination"] == {"page": 2, "limit": 2, "total": 5, "totalPages": 3}

    @pytest.mark.parametrize("tag", ["", "two words", "a" * 65, "naïve", "semi;colon", "new\nline"])
    @pytest.mark.parametrize("path", [JOBS, USER_JOBS])
    def test_a_tag_that_no_email_could_carry_is_a_400_naming_it(self, free: Client, path: str, tag: str) -> None:
        assert_error(free.get(path, tag=tag), 400, TAG_MESSAGE)

    def test_the_longest_tag_is_taken(self, free: Client) -> None:
        job = tagged_email(free.account, "A-z_9" + "x" * 59)

        assert listed(free.get(JOBS, tag="A-z_9" + "x" * 59)) == [str(job.id)]

    def test_a_test_key_lists_only_the_test_jobs_with_the_tag_and_a_live_key_only_the_live_ones(
        self, free: Client
    ) -> None:
        live = [tagged_email(free.account, "trial") for _ in range(2)]
        test = tagged_email(free.account, "trial", test=True)
        tester = with_test_key(free)

        assert listed(tester.get(JOBS, tag="trial")) == [str(test.id)]
        assert tester.get(JOBS, tag="trial").json()["data"]["pagination"]["total"] == 1
        assert listed(free.get(JOBS, tag="trial")) == [str(live[1].id), str(live[0].id)]
        assert free.get(JOBS, tag="trial").json()["data"]["pagination"]["total"] == 2
        assert listed(tester.get(JOBS, tag="trial", type="email")) == [str(test.id)]

    @pytest.mark.parametrize("page_size", [1, 20, 100])
    def test_a_tagged_list_runs_a_constant_number_of_queries(
        self, free: Client, django_assert_num_queries: Any, page_size: int
    ) -> None:
        for _ in range(100):
            tagged_email(free.account, "bulk", "other")
        free.get("/api/v1/ping")  # the key's use is recorded, once a minute (docs/rules.md, "API keys and scopes")

        # API key lookup, count, page.
        with django_assert_num_queries(3):
            response = free.get(JOBS, tag="bulk", limit=str(page_size))

        assert len(response.json()["data"]["data"]) == page_size

    def test_the_page_is_read_down_the_tags_index_in_the_lists_order_and_a_tag_alone_counted_on_its_rows(
        self, free: Client
    ) -> None:
        tagged_email(free.account, "bulk")

        with CaptureQueriesContext(connection) as queries:
            response = free.get(JOBS, tag="bulk")

        assert response.json()["data"]["pagination"]["total"] == 1
        (page,) = [query["sql"] for query in queries if "ORDER BY" in query["sql"]]
        assert 'ORDER BY "notifications_jobtag"."created_at" DESC' in page
        assert '"notifications_jobtag"."account_id" = ' in page
        (count,) = [query["sql"] for query in queries if "COUNT(*)" in query["sql"]]
        assert 'FROM "notifications_jobtag" WHERE' in count
        assert '"notifications_job"' not in count


@pytest.mark.django_db
class TestTheRowsWrittenWithTheJob:
    def test_a_send_writes_each_tag_once_with_the_jobs_creation_time(self, free: Client) -> None:
        job = job_store(new_email(free.account, "welcome", "onboarding", "welcome"))

        assert tag_rows(job) == [("onboarding", job.created_at), ("welcome", job.created_at)]
        assert set(JobTag.objects.filter(job=job).values_list("account_id", "test")) == {(free.account.pk, False)}

    def test_a_test_keys_send_writes_its_tags_in_its_mode(self, free: Client) -> None:
        job = email_job_new(account=free.account, to="user@example.com", subject="S", body="B", test=True)
        job.payload["tags"] = ["trial"]

        job_store(job)

        assert list(JobTag.objects.values_list("job_id", "tag", "test")) == [(job.id, "trial", True)]

    @pytest.mark.django_db(transaction=True)
    def test_a_send_without_tags_costs_what_it_did_and_one_with_tags_adds_their_insert(self, free: Client) -> None:
        job_store(new_email(free.account))  # creates this period's usage row

        with CaptureQueriesContext(connection) as plain:
            job_store(new_email(free.account))
        with CaptureQueriesContext(connection) as tagged:
            job = job_store(new_email(free.account, "a", "b"))

        assert len(tagged_statements := statements(tagged)) == len(statements(plain)) + 1
        assert tagged_statements[-1].startswith('INSERT INTO "notifications_jobtag"')
        assert not any("notifications_jobtag" in statement for statement in statements(plain))
        if connection.vendor == "postgresql":  # the job and its unit in one statement, in the tags' transaction
            assert [query["sql"] for query in tagged if query["sql"] in ("BEGIN", "COMMIT")] == ["BEGIN", "COMMIT"]
        assert [tag for tag, _ in tag_rows(job)] == ["a", "b"]

    def test_a_send_refused_as_a_duplicate_leaves_no_tag(self, free: Client) -> None:
        first = job_store(new_email(free.account, "once", key="k"))

        with pytest.raises(DuplicateRequest):
            job_store(new_email(free.account, "twice", key="k"))

        assert list(JobTag.objects.values_list("job_id", "tag")) == [(first.id, "once")]

    def test_a_send_past_the_quota_leaves_no_tag(self, free: Client) -> None:
        job_store(new_email(free.account))
        UsagePeriod.objects.filter(account=free.account).update(used=free.account.limits.monthly_quota)

        with pytest.raises(QuotaExceeded):
            job_store(new_email(free.account, "late"))

        assert not JobTag.objects.exists()

    def test_an_email_failed_on_arrival_keeps_its_tags(self, free: Client) -> None:
        Suppression.objects.create(account=free.account, email="gone@example.com", reason="bounce")

        job = job_store(new_email(free.account, "receipt", to="gone@example.com"))

        assert Job.objects.get(id=job.id).status == JobStatus.FAILED
        assert tag_rows(job) == [("receipt", job.created_at)]
        assert listed(free.get(JOBS, tag="receipt")) == [str(job.id)]

    def test_a_batch_writes_the_tags_of_each_job_it_stores_failed_on_arrival_included(self, free: Client) -> None:
        Suppression.objects.create(account=free.account, email="gone@example.com", reason="bounce")
        jobs = [
            new_email(free.account, "batch", "first"),
            new_email(free.account),
            new_email(free.account, "batch", to="gone@example.com"),
            new_email(free.account, "batch", key="taken"),
        ]
        job_store(new_email(free.account, key="taken"))

        slots = batch_store(account=free.account, slots=jobs)

        assert isinstance(slots[3], DuplicateRequest)
        stored = list(JobTag.objects.order_by("job__created_at", "tag").values_list("job_id", "tag"))
        assert stored == [(jobs[0].id, "batch"), (jobs[0].id, "first"), (jobs[2].id, "batch")]
        assert Job.objects.get(id=jobs[2].id).status == JobStatus.FAILED
        assert listed(free.get(JOBS, tag="batch")) == [str(jobs[2].id), str(jobs[0].id)]
