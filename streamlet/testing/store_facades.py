"""Plain-value views of timestamped stores, as Kafka Streams' test driver hands them out.

Why: a test written against Kafka Streams asks the driver for a key-value (or window) store and reads
plain values, even though the DSL keeps `ValueAndTimestamp`s; the driver wraps the timestamped store
in a facade (Java's `KeyValueStoreFacade` / `WindowStoreFacade`). Writes through a facade store the
value with no timestamp (-1), as Java's do. `get_timestamped_*` on the driver gives the store itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streamlet.record import KeyValue
from streamlet.stores.api import KeyValueIterator, StateStore, StateStoreContext, ValueAndTimestamp
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueStore, TimestampedKeyValueStore
from streamlet.stores.window.api import TimestampedWindowStore, WindowStore

NO_TIMESTAMP = -1
"""The timestamp of a value written through a facade (Kafka's `ConsumerRecord.NO_TIMESTAMP`)."""


def _plain(found: ValueAndTimestamp | None) -> Any:
    return None if found is None else found.value


def _stamped(value: Any) -> ValueAndTimestamp | None:
    return None if value is None else ValueAndTimestamp(value, NO_TIMESTAMP)


def _plain_values(it: KeyValueIterator[Any, Any]) -> KeyValueIterator[Any, Any]:
    def entries() -> Iterator[KeyValue]:
        for kv in it:
            yield KeyValue(kv.key, _plain(kv.value))

    return StoreKeyValueIterator(entries(), it.close)


class _Facade(StateStore):
    """Lifecycle calls go to the wrapped store (the driver owns it; tests rarely call these)."""

    def __init__(self, inner: StateStore) -> None:
        self.name = inner.name
        self._inner = inner

    def init(self, context: StateStoreContext) -> None:
        self._inner.init(context)

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._inner.close()

    @property
    def persistent(self) -> bool:
        return self._inner.persistent

    @property
    def is_open(self) -> bool:
        return self._inner.is_open

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"


class KeyValueStoreFacade(_Facade, KeyValueStore[Any, Any]):
    """A `TimestampedKeyValueStore` seen as a plain `KeyValueStore`."""

    _inner: TimestampedKeyValueStore[Any]

    def __init__(self, inner: TimestampedKeyValueStore[Any]) -> None:
        super().__init__(inner)

    def get(self, key: Any) -> Any:
        return _plain(self._inner.get(key))

    def put(self, key: Any, value: Any) -> None:
        self._inner.put(key, _stamped(value))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        return _plain(self._inner.put_if_absent(key, ValueAndTimestamp(value, NO_TIMESTAMP)))

    def put_all(self, entries: list[KeyValue] | list[tuple[Any, Any]]) -> None:
        self._inner.put_all([KeyValue(k, _stamped(v)) for k, v in entries])

    def delete(self, key: Any) -> Any:
        return _plain(self._inner.delete(key))

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        return _plain_values(self._inner.range(from_key, to_key))

    def all(self) -> KeyValueIterator[Any, Any]:
        return _plain_values(self._inner.all())

    def approximate_num_entries(self) -> int:
        return self._inner.approximate_num_entries()


class WindowStoreFacade(_Facade, WindowStore):
    """A `TimestampedWindowStore` seen as a plain `WindowStore`."""

    _inner: TimestampedWindowStore

    def __init__(self, inner: TimestampedWindowStore) -> None:
        super().__init__(inner)
        self.window_size_ms = inner.window_size_ms
        self.retention_ms = inner.retention_ms

    def put(self, key: Any, value: Any, window_start: int) -> None:
        self._inner.put(key, _stamped(value), window_start)

    def fetch(self, key: Any, time_from: Any, time_to: Any = None) -> Any:
        if time_to is None:
            return _plain(self._inner.fetch(key, time_from))
        return _plain_values(self._inner.fetch(key, time_from, time_to))

    def fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator[Any, Any]:
        return _plain_values(self._inner.fetch_all(time_from, time_to))

    def all(self) -> KeyValueIterator[Any, Any]:
        return _plain_values(self._inner.all())
