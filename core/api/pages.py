"""One page of a list: the query's `page` and `limit`, and the answer's `pagination` (docs/rules.md, "Limits")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core.api.fields import POSITIVE_INTEGER_SCHEMA, PositiveIntegerParamField
from core.api.serializers import RequestSerializer

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 20


# The query of a list operation; a list with filters adds them in a subclass.
class PageQuery(RequestSerializer):
    page = PositiveIntegerParamField(required=False)
    limit = PositiveIntegerParamField(required=False)

    @property
    def asked_page(self) -> Page:
        return Page.asked(self.validated_data)


@dataclass(frozen=True)
class Page:
    """Which page a validated PageQuery asks for; a limit past MAX_PAGE_SIZE gives MAX_PAGE_SIZE."""

    number: int
    limit: int

    @classmethod
    def asked(cls, query: Mapping[str, Any]) -> Page:
        return cls(query.get("page", 1), min(query.get("limit", DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE))

    def pagination(self, total: int) -> dict[str, int]:
        return {"page": self.number, "limit": self.limit, "total": total, "totalPages": math.ceil(total / self.limit)}


class PaginationSerializer(serializers.Serializer):
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField()
    totalPages = serializers.IntegerField()


def page_parameters(items: str) -> tuple[OpenApiParameter, OpenApiParameter]:
    """The OpenAPI parameters of PageQuery, for a list of ``items`` ("Jobs", "Addresses")."""
    return (
        OpenApiParameter("page", POSITIVE_INTEGER_SCHEMA, description="Page number, from 1", default=1),
        OpenApiParameter(
            "limit",
            POSITIVE_INTEGER_SCHEMA,
            description=f"{items} per page; a larger value gives {MAX_PAGE_SIZE}",
            default=DEFAULT_PAGE_SIZE,
        ),
    )
