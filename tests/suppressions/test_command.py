"""``manage.py suppressions EMAIL list|add|remove [ADDRESS] [--topic T]``: the suppression list at the shell."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F

from accounts.models import Account
from suppressions.management.commands import suppressions as command
from suppressions.models import Suppression, SuppressionReason
from tests.conftest import Client
from tests.factories import FailedJobFactory

NOON = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command("suppressions", *args, stdout=out)
    return out.getvalue().splitlines()


def refusal(*args: str) -> CommandError:
    with pytest.raises(CommandError) as refused:
        run(*args)
    return refused.value


def suppressed(account: Account, email: str, *, minutes_after_noon: int = 0, **fields: Any) -> Suppression:
    """A row as the list stores it, added at a chosen moment (the services stamp the present)."""
    created_at = NOON + timedelta(minutes=minutes_after_noon)
    return Suppression.objects.create(
        account=account,
        email=email,
        reason=fields.pop("reason", SuppressionReason.MANUAL),
        created_at=created_at,
        **fields,
    )


def stored(account: Account) -> list[tuple[str, str]]:
    return list(Suppression.objects.filter(account=account).order_by("email").values_list("email", "reason"))


def email_of(client: Client) -> str:
    return client.account.user.email


# --- list -----------------------------------------------------------------------------------------


def test_list_prints_every_suppression_newest_first_then_the_count(startup: Client) -> None:
    job = FailedJobFactory(account=startup.account, type="email")
    suppressed(startup.account, "old@example.com")
    suppressed(
        startup.account,
        "gone@example.com",
        minutes_after_noon=5,
        reason=SuppressionReason.HARD_BOUNCE,
        provider="SENDGRID",
        job_id=job.id,
    )

    lines = run(email_of(startup), "list")

    assert lines == [
        f"gone@example.com\tHARD_BOUNCE\tSENDGRID\t{job.id}\t2026-11-20T12:05:00.000Z\t-",
        "old@example.com\tMANUAL\t-\t-\t2026-11-20T12:00:00.000Z\t-",
        f"2 suppressed address(es) for {email_of(startup)}.",
    ]


def test_list_of_an_empty_list_prints_only_the_count(free: Client) -> None:
    assert run(email_of(free), "list") == [f"0 suppressed address(es) for {email_of(free)}."]


def test_list_reads_a_batch_a_query_and_lists_each_row_once(
    free: Client, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    monkeypatch.setattr(command, "BATCH_SIZE", 2)
    # Rows added in the same instant straddle a batch's end: the next batch must neither skip nor repeat them.
    rows = [suppressed(free.account, f"user{n}@example.com", minutes_after_noon=n // 3) for n in range(5)]

    with django_assert_num_queries(1 + 3):  # the account, then three batches (2, 2 and a short last one)
        lines = run(email_of(free), "list")

    newest_first = sorted(rows, key=lambda row: (row.created_at, row.id), reverse=True)
    assert [line.split("\t")[0] for line in lines[:-1]] == [row.email for row in newest_first]
    assert lines[-1] == f"5 suppressed address(es) for {email_of(free)}."


def test_list_shows_only_the_accounts_own_addresses(free: Client, startup: Client) -> None:
    suppressed(free.account, "mine@example.com")
    suppressed(startup.account, "theirs@example.com")

    lines = run(email_of(free), "list")

    assert lines == [
        "mine@example.com\tMANUAL\t-\t-\t2026-11-20T12:00:00.000Z\t-",
        f"1 suppressed address(es) for {email_of(free)}.",
    ]


def test_list_prints_the_id_of_a_job_since_purged(free: Client) -> None:
    job_id = uuid.uuid4()  # no job row: finished jobs are purged, the reason stays
    suppressed(free.account, "gone@example.com", reason=SuppressionReason.SPAM_REPORT, provider="RESEND", job_id=job_id)

    assert run(email_of(free), "list")[0].split("\t")[1:4] == ["SPAM_REPORT", "RESEND", str(job_id)]


# --- add and remove -------------------------------------------------------------------------------


def test_add_stores_the_address_in_lower_case_as_manual(free: Client, startup: Client) -> None:
    suppressed(startup.account, "ada@example.com", reason=SuppressionReason.SPAM_REPORT)

    lines = run(email_of(free).upper(), "add", "Ada@Example.com")

    assert lines == [
        f"Suppressed ada@example.com for {email_of(free).upper()} (MANUAL): no email of the account goes to it."
    ]
    row = Suppression.objects.get(account=free.account)
    assert (row.email, row.reason, row.provider, row.job_id) == ("ada@example.com", "MANUAL", None, None)
    assert stored(startup.account) == [("ada@example.com", "SPAM_REPORT")]
    assert run(email_of(free), "list")[0].startswith("ada@example.com\tMANUAL\t-\t-\t")


def test_remove_takes_the_address_off_in_any_case(free: Client, startup: Client) -> None:
    suppressed(free.account, "gone@example.com", reason=SuppressionReason.HARD_BOUNCE, provider="POSTMARK")
    suppressed(free.account, "kept@example.com")
    suppressed(startup.account, "gone@example.com")

    lines = run(email_of(free), "remove", "GONE@example.com")

    assert lines == [
        f"Removed gone@example.com from the suppression list of {email_of(free)}: the account may email it again."
    ]
    assert stored(free.account) == [("kept@example.com", "MANUAL")]
    assert stored(startup.account) == [("gone@example.com", "MANUAL")]


def test_remove_takes_off_an_address_the_api_would_not_take(free: Client) -> None:
    # A provider's event may report a recipient the send endpoint never checked in these words.
    suppressed(free.account, "postmaster@localhost", reason=SuppressionReason.HARD_BOUNCE)

    run(email_of(free), "remove", "postmaster@localhost")

    assert stored(free.account) == []


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("address", ["not-an-address", "user@localhost", "user@127.0.0.1", f"{'a' * 250}@example.com"])
def test_add_refuses_what_the_api_refuses_in_its_words(free: Client, address: str) -> None:
    refused = refusal(email_of(free), "add", address)

    assert (str(refused), refused.returncode) == ("email must be an email", 1)
    assert stored(free.account) == []


def test_add_refuses_an_address_already_on_the_list_and_keeps_its_reason(free: Client) -> None:
    suppressed(free.account, "gone@example.com", reason=SuppressionReason.HARD_BOUNCE)

    refused = refusal(email_of(free), "add", "Gone@example.com")

    assert (str(refused), refused.returncode) == ("Address is already suppressed", 1)
    assert stored(free.account) == [("gone@example.com", "HARD_BOUNCE")]


def test_remove_refuses_an_address_not_on_the_accounts_list(free: Client, startup: Client) -> None:
    suppressed(startup.account, "theirs@example.com")

    refused = refusal(email_of(free), "remove", "theirs@example.com")

    assert (str(refused), refused.returncode) == ("Suppression not found", 1)
    assert stored(startup.account) == [("theirs@example.com", "MANUAL")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add"], "'add' needs the address"),
        (["remove"], "'remove' needs the address"),
        (["list", "ada@example.com"], "'list' takes no address"),
    ],
)
def test_an_address_missing_or_given_where_none_goes_is_refused(free: Client, args: list[str], message: str) -> None:
    suppressed(free.account, "ada@example.com")

    refused = refusal(email_of(free), *args)

    assert (str(refused), refused.returncode) == (message, 1)
    assert stored(free.account) == [("ada@example.com", "MANUAL")]


@pytest.mark.django_db
@pytest.mark.parametrize("args", [["list"], ["add", "ada@example.com"], ["remove", "ada@example.com"]])
def test_an_unknown_account_is_refused(args: list[str]) -> None:
    refused = refusal("nobody@example.com", *args)

    assert (str(refused), refused.returncode) == ("No account for nobody@example.com", 1)
    assert not Suppression.objects.exists()


# --- topics ---------------------------------------------------------------------------------------


def test_a_topic_is_added_listed_and_removed_apart_from_the_entry_for_every_email(startup: Client) -> None:
    account = startup.account

    added = run(email_of(startup), "add", "Ann@Example.com", "--topic", "weekly-digest")
    run(email_of(startup), "add", "ann@example.com")

    assert added == [
        f"Suppressed ann@example.com for {email_of(startup)} (MANUAL): no email of topic weekly-digest goes to it."
    ]
    # NULL last, as PostgreSQL sorts it (SQLite sorts it first).
    by_topic = F("topic").asc(nulls_last=True)
    topics = Suppression.objects.filter(account=account).order_by(by_topic).values_list("email", "topic")
    assert list(topics) == [("ann@example.com", "weekly-digest"), ("ann@example.com", None)]
    assert sorted(line.split("\t")[-1] for line in run(email_of(startup), "list")[:-1]) == ["-", "weekly-digest"]

    removed = run(email_of(startup), "remove", "ann@example.com", "--topic", "weekly-digest")

    assert removed == [
        f"Removed ann@example.com (topic weekly-digest) from the suppression list of {email_of(startup)}: "
        "the account may email it again."
    ]
    assert list(Suppression.objects.filter(account=account).values_list("topic", flat=True)) == [None]


def test_a_bad_topic_is_refused_in_the_apis_words_and_changes_nothing(startup: Client) -> None:
    error = refusal(email_of(startup), "add", "ann@example.com", "--topic", "Weekly Digest")

    assert str(error) == "topic must be 1 to 64 of a-z, 0-9, _ and -"
    assert not Suppression.objects.exists()
    assert str(refusal(email_of(startup), "list", "--topic", "x")) == "'list' takes no topic"
