"""`ReadOnlyKeyValueView`: one store across this instance's local copies, read-only (interactive queries).

Each task holds the partition of the store that belongs to its input partition; a key lives in
exactly one of them, so `get` asks each copy in turn, and scans merge the copies in serialized-key
order (stronger than Kafka Streams, which chains them copy after copy). Reverse scans and prefix scans
are answered from the forward scans of the copies: the stores below only iterate forwards.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

from streamlet.errors import InvalidStateStoreError
from streamlet.queries.provider import StoreProvider, closed_under_query
from streamlet.record import KeyValue
from streamlet.serdes import Serializer
from streamlet.stores.api import KeyValueIterator, ValueAndTimestamp
from streamlet.stores.iterators import StoreKeyValueIterator


def _plain(value: Any) -> Any:
    """A plain view of a timestamped store answers the value alone, as Kafka Streams' facade does."""
    return value.value if isinstance(value, ValueAndTimestamp) else value


def serialized_key(store: Any) -> Callable[[Any], bytes]:
    """The store's own key serialization: scans of several copies merge in this order."""
    key_bytes: Callable[[Any], bytes] = store._key
    return key_bytes


class StoreView:
    """What every read-only view shares: its store's name, where its copies come from, and whether
    values keep their timestamps (the query type decides, not the store)."""

    def __init__(self, provider: StoreProvider) -> None:
        self.name = provider.params.store_name
        self._provider = provider
        self._timestamped = provider.params.queryable_store_type.timestamped

    def _value(self, value: Any) -> Any:
        return value if self._timestamped else _plain(value)

    def local_partitions(self) -> list[tuple[int, str]]:
        """The partitions of the copies this view reads on this instance, each with its copy's role
        ("active", "restoring" or "standby"; partition -1 is a global store's one copy), active first.

        A streamlet addition to Kafka Streams' read-only stores: with it a service that gathers a scan
        from several instances reads each partition once (`with_partition`), preferring active copies
        to stale ones. Raises what every query raises when no copy may answer."""
        return [(c.partition, c.role) for c in self._provider.copies()]


class ReadOnlyKeyValueView(StoreView):
    """Kafka Streams' `ReadOnlyKeyValueStore` over every local copy the query parameters allow.

    Values are plain for `QueryableStoreTypes.key_value_store()` and `ValueAndTimestamp` for
    `timestamped_key_value_store()`. Every method may raise `StateStoreMigratedError` (a rebalance
    is moving the store: ask its new owner) or another `InvalidStateStoreError`."""

    def _entry(self, entry: KeyValue) -> KeyValue:
        return entry if self._timestamped else KeyValue(entry.key, _plain(entry.value))

    def get(self, key: Any) -> Any:
        """The value of `key`, or None."""
        stores = self._provider.stores()
        try:
            for store in stores:
                value = store.get(key)
                if value is not None:
                    return self._value(value)
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc
        return None

    def approximate_num_entries(self) -> int:
        """The sum of the copies' own estimates."""
        stores = self._provider.stores()
        try:
            return sum(store.approximate_num_entries() for store in stores)
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        """Entries with keys from `from_key` to `to_key` inclusive (None: unbounded), ascending."""
        return self._scan(lambda store: store.range(from_key, to_key))

    def all(self) -> KeyValueIterator[Any, Any]:
        """Every entry, ascending by serialized key."""
        return self._scan(lambda store: store.all())

    def reverse_range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        """`range` in descending order."""
        return StoreKeyValueIterator(iter(list(self.range(from_key, to_key))[::-1]))

    def reverse_all(self) -> KeyValueIterator[Any, Any]:
        """`all` in descending order."""
        return StoreKeyValueIterator(iter(list(self.all())[::-1]))

    def prefix_scan(self, prefix: Any, prefix_key_serializer: Serializer[Any]) -> KeyValueIterator[Any, Any]:
        """Entries whose serialized key starts with `prefix` serialized by `prefix_key_serializer`."""
        def matching(store: Any) -> Iterator[KeyValue]:
            wanted = prefix_key_serializer.serialize(getattr(store, "_topic", None) or self.name, prefix) or b""
            key_bytes = serialized_key(store)
            with store.range(None, None) as entries:
                yield from (kv for kv in entries if key_bytes(kv.key).startswith(wanted))

        return self._scan(matching)

    def _scan(self, open_one: Callable[[Any], Iterator[KeyValue]]) -> KeyValueIterator[Any, Any]:
        stores = self._provider.stores()
        try:
            sources = [(open_one(store), serialized_key(store)) for store in stores]
        except InvalidStateStoreError as exc:
            raise closed_under_query(self.name, exc) from exc

        def merged() -> Iterator[KeyValue]:
            keyed = [((key_bytes(kv.key), kv) for kv in source) for source, key_bytes in sources]
            try:
                for _bytes, entry in heapq.merge(*keyed, key=lambda pair: pair[0]):
                    yield self._entry(entry)
            except InvalidStateStoreError as exc:
                raise closed_under_query(self.name, exc) from exc
            finally:
                _close_all(sources)

        return StoreKeyValueIterator(merged(), lambda: _close_all(sources))


def _close_all(sources: list[tuple[Iterator[KeyValue], Any]]) -> None:
    for source, _key_bytes in sources:
        close = getattr(source, "close", None)
        if close is not None:
            close()

