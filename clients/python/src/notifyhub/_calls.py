"""A call of the API as data, built alike for both clients: its route, its parameters and body, and how to read its
answer's ``data``; a paged list as the call for each page."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from ._decode import D, decode

T = TypeVar("T")

Query = Mapping[str, str | int | None]


@dataclass(frozen=True)
class Route:
    """An operation of the API, named as its OpenAPI document names it: ``GET /api/v1/notifications/jobs/{job_id}``."""

    method: str
    path: str

    def call(
        self,
        read: Callable[[Any], T],
        *,
        path: Mapping[str, str] | None = None,
        query: Query | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> Call[T]:
        filled = self.path.format_map({name: quote(value, safe="") for name, value in (path or {}).items()})
        present = {name: value for name, value in (query or {}).items() if value is not None}
        return Call(self, read, filled, present, body)

    def paging(self, item: type[D], *, path: Mapping[str, str] | None = None, query: Query | None = None) -> Paging[D]:
        return Paging(self, item, path or {}, query or {})


@dataclass(frozen=True)
class Call(Generic[T]):
    route: Route
    read: Callable[[Any], T]
    path: str
    query: Mapping[str, str | int]
    body: Mapping[str, Any] | None

    def request(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        """The request, with the client's base URL and headers; the same one on every attempt."""
        return http.build_request(self.route.method, self.path, params=self.query, json=self.body)


def reading(cls: type[D]) -> Callable[[Any], D]:
    """Reads an answer's ``data`` into ``cls``."""
    return lambda data: decode(cls, data)


@dataclass(frozen=True)
class Page(Generic[T]):
    items: tuple[T, ...]
    number: int
    total_pages: int


@dataclass(frozen=True)
class Paging(Generic[D]):
    """A list the API answers a page at a time (``{"data": [...], "pagination": {...}}``): the call for its first
    page, and for the page after each one."""

    route: Route
    item: type[D]
    path: Mapping[str, str]
    query: Query

    def first(self) -> Call[Page[D]]:
        return self._page(1)

    def after(self, page: Page[D]) -> Call[Page[D]] | None:
        return self._page(page.number + 1) if page.number < page.total_pages else None

    def _page(self, number: int) -> Call[Page[D]]:
        return self.route.call(self._read, path=self.path, query={**self.query, "page": number})

    def _read(self, data: Any) -> Page[D]:
        pagination = data["pagination"]
        items = tuple(decode(self.item, item) for item in data["data"])
        return Page(items, pagination["page"], pagination["totalPages"])
