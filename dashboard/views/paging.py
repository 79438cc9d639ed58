"""A list page's pager: the links to the pages either side of this one, keeping the list's filters."""

from __future__ import annotations

import math
from typing import Any

from django.http import QueryDict


def page_query(query: QueryDict, page: int) -> str:
    """The same filters on another page."""
    other = query.copy()
    other["page"] = str(page)
    return other.urlencode()


def numbered_pages(query: QueryDict, *, page: int, per_page: int, total: int) -> dict[str, Any]:
    """The pager of a list whose length is known: this page, how many there are, the links either side."""
    return {
        "page": page,
        "pages": max(1, math.ceil(total / per_page)),
        "previous_query": page_query(query, page - 1) if page > 1 else None,
        "next_query": page_query(query, page + 1) if page * per_page < total else None,
    }
