"""One page of a list, as every list endpoint and dashboard table numbers them."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import QuerySet

RowT = TypeVar("RowT")


def page_rows(
    rows: QuerySet[Any, RowT], *, page: int, limit: int, counted: QuerySet[Any] | None = None
) -> tuple[list[RowT], int]:
    """Page ``page`` (from 1) of ``limit`` rows of the ordered ``rows``, and how many rows there are in all: two
    queries whatever the page size. ``counted``: rows as many as ``rows``, cheaper to count."""
    offset = (page - 1) * limit
    return list(rows[offset : offset + limit]), (rows if counted is None else counted).count()
