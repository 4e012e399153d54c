"""A read-only view of one store across this instance's tasks, for interactive queries.

Each task holds the partition of the store that belongs to its input partition; a query for a key
asks each local copy (a key lives in exactly one), and a scan merges them in serialized-key order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

from streamlet.record import KeyValue
from streamlet.stores.api import KeyValueIterator, KeyValueStore


class CompositeReadOnlyKeyValueStore:
    def __init__(self, name: str, stores: Callable[[], list[Any]]) -> None:
        self.name = name
        self._stores = stores

    def _open(self) -> list[KeyValueStore[Any, Any]]:
        return [s for s in self._stores() if s.is_open]

    def get(self, key: Any) -> Any:
        for store in self._open():
            value = store.get(key)
            if value is not None:
                return value
        return None

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._open())

    def _merge(self, iterators: list[KeyValueIterator[Any, Any]]) -> Iterator[KeyValue]:
        # Each store iterates in serialized-key order; a key lives in one partition only, so a merge
        # by each store's own order of arrival keeps the result sorted when keys sort as their bytes.
        try:
            yield from heapq.merge(*iterators, key=lambda kv: _sort_key(kv.key))
        finally:
            for it in iterators:
                it.close()

    def all(self) -> KeyValueIterator[Any, Any]:
        return self._combined([s.all() for s in self._open()])

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        return self._combined([s.range(from_key, to_key) for s in self._open()])

    def _combined(self, its: list[KeyValueIterator[Any, Any]]) -> KeyValueIterator[Any, Any]:
        def close_all() -> None:
            for it in its:
                it.close()

        return KeyValueIterator(self._merge(its), close_all)


def _sort_key(key: Any) -> Any:
    if isinstance(key, str):
        return key.encode("utf-8")
    return key
