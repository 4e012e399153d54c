"""The timestamped window store with headers (Kafka Streams' KIP-1271): values are `ValueTimestampHeaders`.

Each window's value is kept as Kafka Streams 4.4 keeps it: a varint length of the headers' bytes, the headers,
the 8-byte big-endian timestamp, then the value serde's bytes (the key-value store with headers' format, see
`streamlet.stores.value_formats.join_headers_value`). The changelog is keyed by Kafka Streams' window key schema
and carries the plain value bytes, the stored timestamp as the record timestamp and the stored headers as the
record's headers; a delete logs the current record's timestamp and headers. Restoring joins a changelog record's
headers, timestamp and value back into the local bytes. Window stores without headers are untouched by this.
"""

from __future__ import annotations

from typing import Any

from streamlet.record import Headers, KeyValue
from streamlet.serdes import Serde
from streamlet.stores.api import (
    FlushListener,
    KeyValueIterator,
    StateStoreContext,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    checked_with_headers,
)
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.value_formats import DslTimestampedHeadersValueFormat, TimestampedHeadersValueFormat, ValueFormat
from streamlet.stores.window.api import WindowBytesStore, WindowStore
from streamlet.stores.window.changelogging import ChangeLoggingTimestampedWindowBytesStoreWithHeaders
from streamlet.stores.window.key_schema import from_store_key
from streamlet.stores.window.suppliers import LevelDBWindowBytesStoreSupplier
from streamlet.stores.window.typed import TypedTimestampedWindowStore, TypedWindowStore


class TimestampedWindowStoreWithHeaders(WindowStore):
    """A window store whose values are `ValueTimestampHeaders(value, timestamp, headers)`: each window keeps the
    timestamp and the headers of the write that put its value, as Kafka Streams'
    `TimestampedWindowStoreWithHeaders`. Its changelog records carry the stored headers as record headers.
    Build one with `Stores.timestamped_window_store_with_headers_builder`."""


class TypedTimestampedWindowStoreWithHeaders(TypedWindowStore, TimestampedWindowStoreWithHeaders):
    """The `TimestampedWindowStoreWithHeaders` of a task, over a LevelDB or in-memory window bytes store."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return TimestampedHeadersValueFormat(serde, topic)

    def _change_logging(self, store: WindowBytesStore, context: StateStoreContext) -> WindowBytesStore:
        return ChangeLoggingTimestampedWindowBytesStoreWithHeaders(store, context, self.retain_duplicates)

    def _restores_with_headers(self) -> bool:
        return True

    def _restore(self, entries: list[Any]) -> None:
        """Apply one batch of `HeadedChangelogEntry`s, straight into the bytes store."""
        assert self._format is not None
        local = self._format.from_changelog_entries(entries)  # entries carry headers (registered with_headers)
        writes = []
        for data, value in local:
            key, start, seqnum = from_store_key(data)
            writes.append((key, start, seqnum, value))
        self._bytes.put_all(writes)

    def _plain_listener(self, listener: FlushListener) -> FlushListener:
        """Plain values downstream with the new value's timestamp (a delete keeps its record's)."""

        def forward(key: Any, new: Any, old: Any, timestamp: int, headers: Headers) -> None:
            listener(key, None if new is None else new.value, None if old is None else old.value,
                     timestamp if new is None else new.timestamp, headers)

        return forward

    def put(self, key: Any, value: Any, window_start: int) -> None:
        super().put(key, checked_with_headers(value, ValueTimestampHeaders, "timestamped window store with headers"),
                    window_start)

    def fetch_with_headers(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator[Any, Any]:
        """`fetch(key, time_from, time_to)`, values as `ValueTimestampHeaders` (what the header-returning queries
        read)."""
        return self.fetch(key, time_from, time_to)

    def fetch_all_with_headers(self, time_from: int, time_to: int) -> KeyValueIterator[Any, Any]:
        """`fetch_all`, values as `ValueTimestampHeaders`."""
        return self.fetch_all(time_from, time_to)

    def fetch_all_in_store_order_with_headers(self, time_from: int, time_to: int) -> list[KeyValue]:
        """`fetch_all_in_store_order` (values are `ValueTimestampHeaders` already)."""
        return self.fetch_all_in_store_order(time_from, time_to)


def _with_no_headers(value: ValueAndTimestamp) -> ValueTimestampHeaders:
    return ValueTimestampHeaders(value.value, value.timestamp, ())


class DslTimestampedWindowStoreWithHeaders(TypedTimestampedWindowStore, TimestampedWindowStoreWithHeaders):
    """A windowed aggregation's store under `dsl.store.format=HEADERS` (Kafka Streams' KIP-1285): kept and logged
    as a timestamped window store with headers, while the aggregation reads and writes it as a
    `TimestampedWindowStore` (`ValueAndTimestamp`). The aggregations store their values without headers, as Kafka
    Streams 4.4.0's do, so the header-returning queries answer no headers."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return DslTimestampedHeadersValueFormat(serde, topic)

    def _change_logging(self, store: WindowBytesStore, context: StateStoreContext) -> WindowBytesStore:
        return ChangeLoggingTimestampedWindowBytesStoreWithHeaders(store, context, self.retain_duplicates)

    def _restores_with_headers(self) -> bool:
        return True

    _restore = TypedTimestampedWindowStoreWithHeaders._restore

    def fetch_with_headers(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator[Any, Any]:
        """`fetch(key, time_from, time_to)`, values as `ValueTimestampHeaders` (what the header-returning queries
        read)."""
        with self.fetch(key, time_from, time_to) as found:
            entries = [KeyValue(kv.key, _with_no_headers(kv.value)) for kv in found]
        return StoreKeyValueIterator(iter(entries))

    def fetch_all_with_headers(self, time_from: int, time_to: int) -> KeyValueIterator[Any, Any]:
        """`fetch_all`, values as `ValueTimestampHeaders`."""
        with self.fetch_all(time_from, time_to) as found:
            entries = [KeyValue(kv.key, _with_no_headers(kv.value)) for kv in found]
        return StoreKeyValueIterator(iter(entries))

    def fetch_all_in_store_order_with_headers(self, time_from: int, time_to: int) -> list[KeyValue]:
        """`fetch_all_in_store_order`, values as `ValueTimestampHeaders`."""
        return [KeyValue(kv.key, _with_no_headers(kv.value))
                for kv in self.fetch_all_in_store_order(time_from, time_to)]


class LevelDBWindowHeadersBytesStoreSupplier(LevelDBWindowBytesStoreSupplier):
    """A LevelDB window store for a timestamped window store with headers."""

    factory_name = "persistent_timestamped_window_store_with_headers"
