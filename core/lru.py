"""A process's least-recently-used cache of Python objects, bounded by entries and by their total weight.

Django's cache framework pickles what it keeps (its local-memory backend too), so an object would be rebuilt on every
read: this cache is for objects used as they are.
"""
# Off the framework's road: docs/departures.md, "resolved-template-cache".

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLRU(Generic[K, V]):
    """At most ``max_entries`` values of at most ``max_weight`` together (a value's weight is what its putter says);
    the least recently read or put go first. Safe across a process's threads."""

    def __init__(self, *, max_entries: int, max_weight: int) -> None:
        self.max_entries = max_entries
        self.max_weight = max_weight
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: K, value: V, *, weight: int) -> None:
        """Keeps ``value`` under ``key`` in place of what was there; one heavier than the whole cache is not kept."""
        if weight > self.max_weight:
            return
        with self._lock:
            replaced = self._entries.pop(key, None)
            if replaced is not None:
                self._weight -= replaced[1]
            self._entries[key] = (value, weight)
            self._weight += weight
            while len(self._entries) > self.max_entries or self._weight > self.max_weight:
                _, (_, dropped_weight) = self._entries.popitem(last=False)
                self._weight -= dropped_weight

    def discard(self, key: K) -> None:
        with self._lock:
            dropped = self._entries.pop(key, None)
            if dropped is not None:
                self._weight -= dropped[1]
