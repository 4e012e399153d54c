"""The timestamped key-value store with headers (Kafka Streams' KIP-1271): values are `ValueTimestampHeaders`.

Locally each value is kept as Kafka Streams 4.4 keeps it: a varint length of the headers' bytes, the headers
(`value_formats.serialize_headers`), the 8-byte big-endian timestamp, then the value serde's bytes. The
changelog carries the plain value bytes, the stored timestamp as the record timestamp and the stored headers
as the record's headers; a delete logs the current record's timestamp and headers. Restoring joins a
changelog record's headers, timestamp and value back into the local bytes. Stores without headers are not
touched by any of this: the layers here are only built for a store that opts in.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from typing import Any

from streamlet.record import Headers, KeyValue
from streamlet.serdes import Serde
from streamlet.stores.api import (
    FlushListener,
    K,
    KeyValueIterator,
    StateStoreContext,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    checked_with_headers,
)
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueStore, TimestampedKeyValueStore
from streamlet.stores.keyvalue.changelogging import ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders
from streamlet.stores.keyvalue.typed import TypedKeyValueStore
from streamlet.stores.value_formats import TimestampedHeadersValueFormat, ValueFormat


class TimestampedKeyValueStoreWithHeaders(KeyValueStore[K, ValueTimestampHeaders]):
    """A key-value store whose values are `ValueTimestampHeaders(value, timestamp, headers)`: each key keeps the
    timestamp and the headers of the write that put its value, as Kafka Streams'
    `TimestampedKeyValueStoreWithHeaders`. Its changelog records carry the stored headers as record headers.
    Build one with `Stores.timestamped_key_value_store_with_headers_builder`."""

    @abstractmethod
    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Install the listener that forwards flushed entries (plain values, the new value's timestamp and
        headers); True iff caching is on."""


def _checked(value: Any) -> ValueTimestampHeaders | None:
    checked: ValueTimestampHeaders | None = checked_with_headers(value, ValueTimestampHeaders,
                                                                 "timestamped store with headers")
    return checked


class TypedTimestampedKeyValueStoreWithHeaders(TypedKeyValueStore, TimestampedKeyValueStoreWithHeaders[Any]):
    """The `TimestampedKeyValueStoreWithHeaders` of a task, over a LevelDB or in-memory bytes store."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return TimestampedHeadersValueFormat(serde, topic)

    def _change_logging(self, store: KeyValueBytesStore, context: StateStoreContext) -> KeyValueBytesStore:
        return ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders(store, context)

    def _restores_with_headers(self) -> bool:
        return True

    def put(self, key: Any, value: Any) -> None:
        super().put(key, _checked(value))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        return super().put_if_absent(key, _checked(value))

    def put_all(self, entries: Iterable[KeyValue] | Iterable[tuple[Any, Any]]) -> None:
        super().put_all([(k, _checked(v)) for k, v in entries])

    def get_with_headers(self, key: Any) -> ValueTimestampHeaders | None:
        """`get`: the value with its timestamp and headers (what the header-returning queries read)."""
        return self.get(key)

    def range_with_headers(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        """`range`, values as `ValueTimestampHeaders` (what the header-returning queries read)."""
        return self.range(from_key, to_key)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Flushed entries go on as plain values with the new value's timestamp and the headers of the record
        that made the update, as Kafka Streams' timestamped flush listener forwards them."""
        def forward_plain_values(key: Any, new: Any, old: Any, timestamp: int, headers: Headers) -> None:
            listener(
                key,
                None if new is None else new.value,
                None if old is None else old.value,
                timestamp if new is None else new.timestamp,
                headers,
            )

        return super().set_flush_listener(forward_plain_values, send_old_values)


def _timestamped(value: Any) -> ValueAndTimestamp | None:
    return None if value is None else ValueAndTimestamp(value.value, value.timestamp)


def _as_headers(value: Any) -> ValueTimestampHeaders | None:
    """A DSL processor's `ValueAndTimestamp` as stored: without headers (Kafka Streams 4.4's DSL stores them so)."""
    if value is None or value.value is None:
        return None
    if not isinstance(value, ValueAndTimestamp):
        raise TypeError(f"a DSL store takes ValueAndTimestamp(value, timestamp) values, got {type(value).__name__}")
    return ValueTimestampHeaders(value.value, value.timestamp, ())


class DslTimestampedKeyValueStoreWithHeaders(TypedTimestampedKeyValueStoreWithHeaders, TimestampedKeyValueStore[Any]):
    """A DSL table's store under `dsl.store.format=HEADERS` (Kafka Streams' KIP-1285): kept, logged and queried
    as a timestamped key-value store with headers, while the DSL's processors read and write it as a
    `TimestampedKeyValueStore` (`ValueAndTimestamp`). Values the DSL writes are stored without headers, as
    Kafka Streams 4.4.0 stores them; a delete logs the current record's headers."""

    def get(self, key: Any) -> Any:
        return _timestamped(super().get(key))

    def get_with_headers(self, key: Any) -> ValueTimestampHeaders | None:
        return TypedTimestampedKeyValueStoreWithHeaders.get(self, key)

    def put(self, key: Any, value: Any) -> None:
        super().put(key, _as_headers(value))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        return _timestamped(super().put_if_absent(key, _as_headers(value)))

    def put_all(self, entries: Iterable[KeyValue] | Iterable[tuple[Any, Any]]) -> None:
        super().put_all([(k, _as_headers(v)) for k, v in entries])

    def delete(self, key: Any) -> Any:
        return _timestamped(super().delete(key))

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        return _timestamped_entries(super().range(from_key, to_key))

    def all(self) -> KeyValueIterator[Any, Any]:
        return _timestamped_entries(super().all())

    def range_with_headers(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        return TypedTimestampedKeyValueStoreWithHeaders.range(self, from_key, to_key)


def _timestamped_entries(found: KeyValueIterator[Any, Any]) -> KeyValueIterator[Any, Any]:
    return StoreKeyValueIterator((KeyValue(kv.key, _timestamped(kv.value)) for kv in found), found.close)
