"""core/sql.py's pieces of a raw statement: the text they give, and what that text does on the database."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import Account
from core import sql
from notifications.models import Job
from tests.conftest import Client
from tests.factories import EmailEventFactory, JobFactory
from webhooks_inbound.models import EmailEvent

SOME_ACCOUNT_FIELDS = ("deleted_at", "id", "is_active", "plan_started_on")


def test_in_list_gives_one_placeholder_per_value() -> None:
    assert sql.in_list(1) == "%s"
    assert sql.in_list(3) == "%s, %s, %s"


def test_values_rows_gives_a_parenthesised_row_of_placeholders_per_row() -> None:
    assert sql.values_rows(1, width=2) == "(%s, %s)"
    assert sql.values_rows(3, width=2) == "(%s, %s), (%s, %s), (%s, %s)"


def test_columns_of_some_fields_come_in_the_models_order_whatever_order_they_are_named_in() -> None:
    assert (
        sql.columns(Account, "a", fields=SOME_ACCOUNT_FIELDS)
        == 'a."id", a."plan_started_on", a."is_active", a."deleted_at"'
    )
    assert sql.columns(Job, fields=("id", "account")) == '"id", "account_id"'
    assert sql.placeholders(Account, fields=SOME_ACCOUNT_FIELDS) == "%s, %s, %s, %s"


def test_in_batches_leaves_room_for_each_values_width_and_the_other_parameters() -> None:
    limit = connection.features.max_query_params or 65_535
    per_batch = (limit - 2) // 8

    batches = sql.in_batches(list(range(2 * per_batch + 1)), width=8, other_params=2)

    assert [len(batch) for batch in batches] == [per_batch, per_batch, 1]


def test_an_in_list_selects_the_rows_it_names(free: Client) -> None:
    jobs = JobFactory.create_batch(3, account=free.account)
    wanted = [sql.db_value(Job, "id", job.id) for job in jobs[:2]]
    statement = f"SELECT {sql.columns(Job)} FROM {sql.table(Job)} WHERE {sql.column(Job, 'id')} IN ({{}})"

    with connection.cursor() as cursor:
        cursor.execute(statement.format(sql.in_list(len(wanted))), wanted)
        found = [sql.from_row(Job, row) for row in cursor.fetchall()]

    assert {job.id for job in found} == {jobs[0].id, jobs[1].id}


def test_values_rows_insert_every_row_with_its_values_prepared_as_save_would(free: Client) -> None:
    job = JobFactory(account=free.account)
    events = [EmailEventFactory.build(job=job, payload=f'{{"n": {n}}}') for n in range(3)]
    fields = tuple(field.name for field in EmailEvent._meta.concrete_fields if not field.primary_key)
    statement = f"INSERT INTO {sql.table(EmailEvent)} ({sql.columns(EmailEvent, fields=fields)}) VALUES {{}}"

    with connection.cursor() as cursor:
        params = sql.insert_values(*events, fields=fields)
        cursor.execute(statement.format(sql.values_rows(len(events), width=len(fields))), params)

    stored = EmailEvent.objects.filter(job=job).order_by("provider_event_id")
    assert [(event.provider_event_id, event.payload) for event in stored] == [
        (event.provider_event_id, event.payload) for event in events
    ]


def test_from_row_reads_a_partial_row_converted_with_the_other_fields_deferred(free: Client) -> None:
    deleted_at = timezone.now().replace(microsecond=0)
    Account.objects.filter(pk=free.account.pk).update(deleted_at=deleted_at, is_active=False)
    statement = f"""
        SELECT {sql.columns(Account, fields=SOME_ACCOUNT_FIELDS)} FROM {sql.table(Account)}
        WHERE {sql.column(Account, "id")} = %s
    """

    with connection.cursor() as cursor:
        cursor.execute(statement, [free.account.pk])
        account = sql.from_row(Account, cursor.fetchone(), fields=SOME_ACCOUNT_FIELDS)

    assert (account.pk, account.is_active, account.deleted_at) == (free.account.pk, False, deleted_at)
    assert isinstance(account.deleted_at, datetime)
    assert timezone.is_aware(account.deleted_at)
    assert account.plan_started_on == free.account.plan_started_on
    assert isinstance(account.plan_started_on, date)
    assert "public_id" in account.get_deferred_fields()
    assert "deleted_at" not in account.get_deferred_fields()


def test_naming_what_is_no_concrete_field_fails() -> None:
    with pytest.raises(AssertionError):
        sql.columns(Account, fields=("api_keys",))
