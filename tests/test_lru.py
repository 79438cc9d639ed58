"""core.lru.BoundedLRU: what it keeps and what goes first."""

from __future__ import annotations

from core.lru import BoundedLRU


def kept(cache: BoundedLRU[str, int], *keys: str) -> list[str]:
    return [key for key in keys if cache.get(key) is not None]


def test_past_its_entries_the_least_recently_used_goes_first() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(max_entries=2, max_weight=100)
    cache.put("a", 1, weight=1)
    cache.put("b", 2, weight=1)
    assert cache.get("a") == 1  # read: now the most recently used

    cache.put("c", 3, weight=1)

    assert kept(cache, "a", "b", "c") == ["a", "c"]


def test_past_its_weight_the_oldest_go_until_it_fits() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(max_entries=10, max_weight=10)
    cache.put("a", 1, weight=4)
    cache.put("b", 2, weight=4)
    cache.put("c", 3, weight=2)

    cache.put("d", 4, weight=7)

    assert kept(cache, "a", "b", "c", "d") == ["c", "d"]


def test_a_value_put_again_replaces_its_weight_and_one_heavier_than_the_cache_is_not_kept() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(max_entries=10, max_weight=10)
    cache.put("a", 1, weight=9)
    cache.put("a", 2, weight=1)
    cache.put("b", 3, weight=9)

    cache.put("c", 4, weight=11)

    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (2, 3, None)
