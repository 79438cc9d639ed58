"""Reading an account's suppression list."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q, QuerySet

from accounts.models import Account
from core import sql
from core.paging import page_rows
from suppressions.models import Suppression


def normalized_address(email: str) -> str:
    """The form an address is stored and compared in: the list compares addresses without case."""
    return email.lower()


def may_be_listed(email: str) -> bool:
    """Whether ``email`` could be on a list at all: no address with a NUL is, and PostgreSQL refuses to compare one."""
    return "\0" not in email


# Every email's send asks it, and through the ORM building the statement cost more than running it
# (docs/departures.md). Both read the unique indexes that (account, address) leads.
# Off the framework's road: docs/departures.md, "raw-sql-suppression-check".
_REASON_OF_ADDRESS = f"""
    SELECT {sql.column(Suppression, "reason")} FROM {sql.table(Suppression)}
    WHERE {sql.column(Suppression, "account")} = %s AND {sql.column(Suppression, "email")} = %s
"""
# An email without a topic (a transactional one), most sends: only the entry for every email stops it, the one row
# the partial unique index holds for the address.
SUPPRESSION_REASON_SQL = f"{_REASON_OF_ADDRESS} AND {sql.column(Suppression, 'topic')} IS NULL"
# An email on a topic: the address's entry for every email, else its entry for the topic.
TOPIC_SUPPRESSION_REASON_SQL = f"""{_REASON_OF_ADDRESS}
      AND ({sql.column(Suppression, "topic")} IS NULL OR {sql.column(Suppression, "topic")} = %s)
    ORDER BY {sql.column(Suppression, "topic")} IS NULL DESC LIMIT 1
"""


def suppression_reason(*, account_id: int, email: str, topic: str | None = None) -> str | None:
    """Why the account does not email ``email`` on ``topic`` (None: a transactional email, which only an entry for
    every email stops), or None when it may: one lookup in a unique index."""
    params: list[int | str] = [account_id, normalized_address(email)]
    statement = SUPPRESSION_REASON_SQL if topic is None else TOPIC_SUPPRESSION_REASON_SQL
    if topic is not None:
        params.append(topic)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    return None if row is None else str(row[0])


@dataclass(frozen=True)
class ListedAddresses:
    """Some addresses' entries on an account's list, as one read found them: {address: {topic or None: reason}}."""

    entries: dict[str, dict[str | None, str]]

    def reason(self, email: str, *, topic: str | None) -> str | None:
        """Why an email on ``topic`` does not go to ``email``: its entry for every email, else the topic's."""
        entries = self.entries.get(normalized_address(email), {})
        return entries.get(None) or (entries.get(topic) if topic is not None else None)


def suppression_reasons(*, account_id: int, emails: Collection[str], topics: Collection[str] = ()) -> ListedAddresses:
    """The entries for every email and for each of ``topics`` of each of ``emails`` the account does not email: one
    query for a batch's addresses."""
    if not emails:
        return ListedAddresses({})
    listed = Suppression.objects.filter(account_id=account_id, email__in={normalized_address(e) for e in emails})
    listed = listed.filter(Q(topic__isnull=True) | Q(topic__in=set(topics)))
    entries: dict[str, dict[str | None, str]] = {}
    for email, topic, reason in listed.values_list("email", "topic", "reason"):
        entries.setdefault(email, {})[topic] = reason
    return ListedAddresses(entries)


def suppression_entry(*, account_id: int, email: str, topic: str | None) -> Suppression | None:
    """The address's entry for ``topic`` (None: for every email) on the account's list, or None."""
    if not may_be_listed(email):
        return None
    return Suppression.objects.filter(account_id=account_id, email=normalized_address(email), topic=topic).first()


def suppression_list(
    *,
    account: Account,
    page: int,
    limit: int,
    email: str | None = None,
    containing: str | None = None,
    reason: str | None = None,
    topic: str | None = None,
) -> tuple[list[Suppression], int]:
    """One page of the account's suppressions, newest first, and their total.

    ``email`` finds one address; ``containing``, every address with that text in it (the dashboard's search);
    ``topic``, the entries for that topic.
    """
    suppressions = _suppressions_of(account, email=email, containing=containing, reason=reason)
    if topic is not None:
        suppressions = suppressions.filter(topic=topic)
    return page_rows(suppressions, page=page, limit=limit)


def _suppressions_of(
    account: Account, *, email: str | None, containing: str | None, reason: str | None
) -> QuerySet[Suppression]:
    suppressions = Suppression.objects.filter(account=account)
    if email is not None and not may_be_listed(email):
        return suppressions.none()
    if email is not None:
        suppressions = suppressions.filter(email=normalized_address(email))
    if containing:
        suppressions = suppressions.filter(email__contains=normalized_address(containing))
    if reason is not None:
        suppressions = suppressions.filter(reason=reason)
    return suppressions


def suppression_batches(*, account: Account, batch_size: int) -> Iterator[list[Suppression]]:
    """The account's suppressions, newest first, a batch a query.

    Each batch starts after the last row of the one before (keyset paging down the ``(account, -created_at)``
    index), so the thousandth costs what the first did, where an OFFSET would read every row before it again. No
    cursor stays open between batches: behind PgBouncer ``iterator()`` would read the whole result at once.
    """
    suppressions = Suppression.objects.filter(account=account).order_by("-created_at", "-id")
    batch = list(suppressions[:batch_size])
    while batch:
        yield batch
        if len(batch) < batch_size:
            return  # a short batch was the last: no query to find nothing
        last = batch[-1]
        after_last = Q(created_at__lt=last.created_at) | Q(created_at=last.created_at, id__lt=last.id)
        batch = list(suppressions.filter(after_last)[:batch_size])
