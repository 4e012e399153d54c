"""The versioned key-value store contract: `VersionedKeyValueStore`, `VersionedRecord`, and the bytes
store and supplier under them.

A versioned store keeps, per key, the record versions of the last `history_retention` of stream
time, so a reader can ask what a key's value was as of a timestamp (a stream-table join against a
versioned table asks as of each stream record's timestamp). Its names and rules are Kafka Streams'
(KIP-889, KIP-960): `put` returns the new version's validTo (or one of two codes), the history
retention doubles as the grace period after which writes are refused, and the latest version of a
key never expires.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from streamlet.stores.api import ChangelogEntry, FlushListener, StateStore, StateStoreContext

PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
"""`put`'s answer when the version put is now the key's latest (its validTo is open)."""

PUT_RETURN_CODE_NOT_PUT = -(2**63)
"""`put`'s answer when the version was refused: older than the grace period (Java's `Long.MIN_VALUE`)."""


@dataclass(frozen=True, slots=True)
class VersionedRecord:
    """One version of a key's value: the value, the timestamp it is valid from, and (when the reader
    knows it) the timestamp it is valid to, exclusive, as Kafka Streams' `VersionedRecord`.

    `valid_to` is None for the latest version and wherever Kafka Streams leaves it empty: a store read
    through `VersionedKeyValueStore.get` never fills it in (Kafka Streams' typed store drops it); the
    interactive queries over HTTP do, as its `VersionedKeyQuery` does. A version's value is never None:
    a deletion is the absence of a version."""

    value: Any
    timestamp: int
    valid_to: int | None = None

    def __post_init__(self) -> None:
        if self.value is None:
            raise ValueError("a VersionedRecord's value cannot be None")


class VersionedKeyValueStore(StateStore):
    """A key-value store that keeps several versions per key, each valid from its timestamp until the
    next version's (Kafka Streams' `VersionedKeyValueStore`).

    History retention: reads as of a timestamp older than `stream time - history_retention` find
    nothing, unless the key's latest version already applied then (the latest never expires). It is
    also the grace period: a put or delete older than `stream time - history_retention` is refused.
    Stream time is the largest timestamp the store was written with. Versioned stores never cache.
    """

    PUT_RETURN_CODE_VALID_TO_UNDEFINED = PUT_RETURN_CODE_VALID_TO_UNDEFINED
    PUT_RETURN_CODE_NOT_PUT = PUT_RETURN_CODE_NOT_PUT

    history_retention_ms: int

    @abstractmethod
    def put(self, key: Any, value: Any, timestamp: int) -> int:
        """Add a version of `key` valid from `timestamp` (None: a deletion from then on); a version
        with the same key and timestamp is replaced. Returns the new version's validTo timestamp:
        `PUT_RETURN_CODE_VALID_TO_UNDEFINED` (-1) when it is now the latest version,
        `PUT_RETURN_CODE_NOT_PUT` when it was refused (older than the grace period)."""

    @abstractmethod
    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None:
        """`put(key, None, timestamp)`, returning the version valid at `timestamp` before it (None if
        there was none, or if `timestamp` is older than the grace period: nothing is deleted then)."""

    @abstractmethod
    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord | None:
        """The key's latest version (no `as_of_timestamp`), or the version valid at `as_of_timestamp`
        (the one with the largest timestamp not after it); None when there is none, or when
        `as_of_timestamp` is past the history retention and the latest version is newer."""

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """False: a versioned store has no cache, so a DSL node over it forwards every update itself."""
        return False


class VersionedBytesStore(ABC):
    """The bytes level of a versioned store: keys and values as bytes, versions by timestamp.

    What the change-logging layer and the typed facade wrap; `SegmentedVersionedBytesStore` is the
    implementation (Kafka Streams' RocksDB versioned store, over a key-value bytes store).
    """

    name: str
    history_retention_ms: int

    @abstractmethod
    def open(self, context: StateStoreContext) -> None: ...

    @abstractmethod
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """As `VersionedKeyValueStore.put`."""

    @abstractmethod
    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        """As `VersionedKeyValueStore.delete`; the record's value is bytes."""

    @abstractmethod
    def get(self, key: bytes) -> VersionedRecord | None:
        """The latest version (its `valid_to` is None)."""

    @abstractmethod
    def get_as_of(self, key: bytes, as_of_timestamp: int) -> VersionedRecord | None:
        """The version valid at `as_of_timestamp`, with its `valid_to` when it is not the latest."""

    @abstractmethod
    def get_versions(self, key: bytes, from_time: int, to_time: int) -> list[VersionedRecord]:
        """The key's versions valid at some time in `[from_time, to_time]` (a version starting at or
        before `to_time` and valid past `from_time`), newest first, each with its `valid_to` (None for
        the latest); tombstones are no versions."""

    @abstractmethod
    def restore(self, entries: list[ChangelogEntry]) -> None:
        """Apply a batch read back from the changelog (each entry a put at its record timestamp)."""

    @abstractmethod
    def flush(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def persistent(self) -> bool: ...

    @property
    @abstractmethod
    def is_open(self) -> bool: ...


class VersionedBytesStoreSupplier(ABC):
    """What `Stores.persistent_versioned_key_value_store(...)` and `Stores.in_memory_versioned_key_value_store(...)`
    return: the store's name and history retention, and a fresh bytes store per task; pass it to
    `Stores.versioned_key_value_store_builder` or to `Materialized` for a versioned table."""

    name: str
    history_retention_ms: int
    segment_interval_ms: int

    @abstractmethod
    def get(self) -> VersionedBytesStore:
        """A new bytes store (one per task)."""

    @property
    @abstractmethod
    def persistent(self) -> bool: ...

    @property
    @abstractmethod
    def metrics_scope(self) -> str: ...
