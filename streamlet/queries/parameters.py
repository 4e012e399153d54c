"""`StoreQueryParameters` and `QueryableStoreTypes`: what `KafkaStreams.store()` is asked for.

As in Kafka Streams, the store type decides the view a query gets: `key_value_store()` accepts plain
and timestamped key-value stores and always answers plain values (the timestamp is dropped), while
`timestamped_key_value_store()` accepts only timestamped stores and answers `ValueAndTimestamp`. The
window types work the same way. A type that does not accept the store's real type is an error at
query time, naming both, as Kafka Streams does.

`versioned_key_value_store()` is streamlet's: Kafka Streams answers versioned stores only through its
IQv2 `VersionedKeyQuery`, whose answer (the record valid as of a time, with its validTo) the view of
this type gives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from streamlet.stores.keyvalue.api import KeyValueStore, TimestampedKeyValueStore
from streamlet.stores.session.api import SessionStore
from streamlet.stores.versioned.api import VersionedKeyValueStore
from streamlet.stores.window.api import TimestampedWindowStore, WindowStore


@dataclass(frozen=True)
class QueryableStoreType:
    """One kind of read-only view (Kafka Streams' `QueryableStoreType`); get one from `QueryableStoreTypes`.

    `kind` is "key_value", "window", "session" or "versioned"; `timestamped` says whether values come back as
    `ValueAndTimestamp` (and whether only timestamped stores are accepted)."""

    kind: str
    timestamped: bool

    def accepts(self, store: Any) -> bool:
        """True when a local store of this real type can answer this kind of query."""
        if self.kind == "key_value":
            if isinstance(store, SessionStore):  # built on the key-value layers, but not one to users
                return False
            wanted: type = TimestampedKeyValueStore if self.timestamped else KeyValueStore
        elif self.kind == "window":
            wanted = TimestampedWindowStore if self.timestamped else WindowStore
        elif self.kind == "versioned":
            wanted = VersionedKeyValueStore
        else:
            wanted = SessionStore
        return isinstance(store, wanted)

    def __str__(self) -> str:
        return f"{'timestamped_' if self.timestamped else ''}{self.kind}_store"


class QueryableStoreTypes:
    """Factories of the store types Kafka Streams' `QueryableStoreTypes` offers."""

    @staticmethod
    def key_value_store() -> QueryableStoreType:
        """Any key-value store (plain or timestamped); values are plain."""
        return QueryableStoreType("key_value", False)

    @staticmethod
    def timestamped_key_value_store() -> QueryableStoreType:
        """Timestamped key-value stores only (what DSL aggregations build); values are `ValueAndTimestamp`."""
        return QueryableStoreType("key_value", True)

    @staticmethod
    def window_store() -> QueryableStoreType:
        """Any window store (plain or timestamped); values are plain."""
        return QueryableStoreType("window", False)

    @staticmethod
    def timestamped_window_store() -> QueryableStoreType:
        """Timestamped window stores only (windowed DSL aggregations); values are `ValueAndTimestamp`."""
        return QueryableStoreType("window", True)

    @staticmethod
    def session_store() -> QueryableStoreType:
        """Session stores (session-windowed aggregations); values are the plain aggregates."""
        return QueryableStoreType("session", False)

    @staticmethod
    def versioned_key_value_store() -> QueryableStoreType:
        """Versioned key-value stores (streamlet's, see the module docstring): `get(key, as_of_timestamp)`
        answers a `VersionedRecord`."""
        return QueryableStoreType("versioned", False)


@dataclass(frozen=True)
class StoreQueryParameters:
    """Which store to query and how (Kafka Streams' class of the same name).

    Build it with `from_name_and_type(name, QueryableStoreTypes.key_value_store())`, then optionally
    `.enable_stale_stores()` (also read standby copies and copies still restoring, which may lag the
    active one) and `.with_partition(p)` (only the copy of partition p). Each returns a new object."""

    store_name: str
    queryable_store_type: QueryableStoreType
    partition: int | None = None
    stale_stores: bool = False

    @classmethod
    def from_name_and_type(cls, store_name: str, queryable_store_type: QueryableStoreType) -> StoreQueryParameters:
        """Parameters for querying `store_name` as `queryable_store_type`, active copies, all partitions."""
        return cls(store_name, queryable_store_type)

    def enable_stale_stores(self) -> StoreQueryParameters:
        """Also answer from standby tasks and from active tasks still restoring (possibly stale)."""
        return replace(self, stale_stores=True)

    def with_partition(self, partition: int) -> StoreQueryParameters:
        """Query only the copy of this partition."""
        return replace(self, partition=partition)

    def with_all_partitions(self) -> StoreQueryParameters:
        """Query every local partition (the default)."""
        return replace(self, partition=None)

    def stale_stores_enabled(self) -> bool:
        """Kafka Streams' accessor name for `stale_stores`."""
        return self.stale_stores


def native_store_type(builder: Any) -> QueryableStoreType:
    """The query type matching the class of the store `builder` builds, with values as stored
    (`ValueAndTimestamp` for timestamped stores): what a bare store name asks for."""
    sample = builder.build()
    if isinstance(sample, SessionStore):
        return QueryableStoreType("session", False)
    if isinstance(sample, VersionedKeyValueStore):
        return QueryableStoreType("versioned", False)
    if isinstance(sample, WindowStore):
        return QueryableStoreType("window", isinstance(sample, TimestampedWindowStore))
    return QueryableStoreType("key_value", isinstance(sample, TimestampedKeyValueStore))
