"""The key-value store contract: the typed `KeyValueStore` and the `KeyValueBytesStore` under it.

The typed interfaces are what processors and tests use (`KeyValueStore`, and the
`TimestampedKeyValueStore` the DSL's aggregations keep); the bytes store (bytes -> bytes, iterated in
unsigned byte order) is what each backend implements (`leveldb/keyvalue.py`, `memory/keyvalue.py`,
`spark/keyvalue.py`) and what session stores are kept in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic

from streamlet.record import KeyValue
from streamlet.stores.api import (
    BytesIterator,
    BytesWriteBatch,
    FlushListener,
    K,
    KeyValueIterator,
    StateStore,
    StateStoreContext,
    V,
    ValueAndTimestamp,
)


class KeyValueStore(StateStore, Generic[K, V]):
    """The typed key-value store interface of the API contract."""

    @abstractmethod
    def get(self, key: K) -> V | None:
        """The value stored under `key`, or None."""

    @abstractmethod
    def put(self, key: K, value: V | None) -> None:
        """`put(key, None)` deletes, as in Kafka Streams."""

    @abstractmethod
    def put_if_absent(self, key: K, value: V) -> V | None:
        """Store `value` under `key` only if nothing is stored there; returns what was there (None if it stored)."""

    @abstractmethod
    def put_all(self, entries: list[KeyValue] | list[tuple[K, V]]) -> None:
        """Store every `(key, value)` pair, in order."""

    @abstractmethod
    def delete(self, key: K) -> V | None:
        """Remove `key`; returns the value it had, or None."""

    @abstractmethod
    def range(self, from_key: K | None, to_key: K | None) -> KeyValueIterator[K, V]:
        """Inclusive on both ends; None means unbounded on that side."""

    @abstractmethod
    def all(self) -> KeyValueIterator[K, V]:
        """Every entry in key order (of the serialized keys), as a `KeyValueIterator`; close it after use."""

    @abstractmethod
    def approximate_num_entries(self) -> int:
        """About how many entries the store holds (exact for in-memory stores)."""


class TimestampedKeyValueStore(KeyValueStore[K, ValueAndTimestamp]):
    """A key-value store whose values are `ValueAndTimestamp`; what the DSL's aggregations use.

    In its changelog the value bytes are the plain value's, and the timestamp is the Kafka record's
    timestamp, as Kafka Streams writes timestamped changelogs.
    """

    @abstractmethod
    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Install the listener that forwards flushed entries; True iff caching is on.

        When it returns False the processor must forward each update itself.
        """


class KeyValueBytesStore(ABC):
    """The innermost layer: bytes -> bytes, iterated in unsigned byte order of keys.

    Backends (LevelDB, in-memory) and the change-logging wrapper implement it, so the caching and
    typed layers work the same over any of them.
    """

    name: str

    @abstractmethod
    def open(self, context: StateStoreContext) -> None:
        """Open (creating if needed); a persistent store keeps its files in `context.state_dir / name`."""

    @abstractmethod
    def get(self, key: bytes) -> bytes | None: ...

    @abstractmethod
    def put(self, key: bytes, value: bytes | None) -> None:
        """`None` deletes, as in Kafka Streams."""

    @abstractmethod
    def delete(self, key: bytes) -> None: ...

    @abstractmethod
    def batch(self) -> BytesWriteBatch:
        """A write batch: one atomic write for `put_all`, cache flushes and restoration."""

    @abstractmethod
    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        """Inclusive on both ends; None means unbounded on that side."""

    def all(self) -> BytesIterator:
        return self.range(None, None)

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, bytes]]:
        """`range(from_key, to_key)` read at once, for scans known to be small (a session store's lookup of
        one key's sessions, once per record): a backend may override it to skip the per-entry iterator."""
        with self.range(from_key, to_key) as found:
            return list(found)

    @abstractmethod
    def approximate_num_entries(self) -> int: ...

    @abstractmethod
    def flush(self) -> None:
        """Push writes held above the store down (called at every commit). Durability is not asked
        for here: a persistent store registers its sync with `StateStoreContext.register_sync`."""

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def persistent(self) -> bool: ...

    @property
    @abstractmethod
    def is_open(self) -> bool: ...


class KeyValueBytesStoreSupplier(ABC):
    """What `Stores.persistent_key_value_store(name)` & co. return: a new bytes store per `get()`."""

    name: str

    @abstractmethod
    def get(self) -> KeyValueBytesStore:
        """A new bytes store (one per task)."""

    @property
    @abstractmethod
    def persistent(self) -> bool:
        """True for stores on disk."""

    @property
    @abstractmethod
    def metrics_scope(self) -> str:
        """Kafka Streams' name for the backend ("rocksdb" there; "leveldb" / "in-memory" here)."""
