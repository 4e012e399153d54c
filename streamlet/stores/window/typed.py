"""`TypedWindowStore`: the window store processors and tests use; applies the serdes.

The outermost layer (Kafka Streams' "metered" window store): it serializes keys and values, picks
the sequence number of each write, registers with the runtime for restoration (which writes
straight into the bytes store: no changelog, no forwarding), and turns stored windows back into
`KeyValue(window_start, value)` or `KeyValue(Windowed(key, window), value)`.

With caching on (and a cache budget for the task) a `CachingWindowBytesStore` sits right under it:
writes reach the bytes store and the changelog when the cache flushes, and a DSL node over it
forwards what the flush listener gets (`set_flush_listener`); otherwise every `put` reaches them at
once and the DSL node forwards every update itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, NoReturn

from streamlet.errors import ConfigError, InvalidStateStoreError, StreamsError
from streamlet.record import Headers, KeyValue
from streamlet.serdes import Deserializer, Serde, Serializer
from streamlet.stores.api import ChangelogEntry, FlushListener, KeyValueIterator, StateStoreContext, ValueAndTimestamp
from streamlet.stores.iterators import StoreKeyValueIterator
from streamlet.stores.keyvalue.typed import _no_context, changelog_topic
from streamlet.stores.position import Position
from streamlet.stores.value_formats import PlainValueFormat, TimestampedValueFormat, ValueFormat
from streamlet.stores.window.api import TimestampedWindowStore, WindowBytesStore, WindowEntry, WindowStore
from streamlet.stores.window.caching import CachingWindowBytesStore
from streamlet.stores.window.changelogging import (
    ChangeLoggingTimestampedWindowBytesStore,
    ChangeLoggingWindowBytesStore,
    ChangeLoggingWindowBytesStoreWithRecordHeaders,
)
from streamlet.stores.window.key_schema import from_store_key
from streamlet.windowed import MAX_TIME, TimeWindow, Windowed

_new = tuple.__new__  # a KeyValue without the Python-level NamedTuple __new__ frame

_SEQNUM_MASK = 0x7FFFFFFF


def _millis(time: Any) -> int:
    """Window store times: int epoch ms or an aware `datetime`."""
    if isinstance(time, datetime):
        if time.tzinfo is None:
            raise ValueError("window store times must be aware datetimes (with tzinfo) or int milliseconds")
        return int(time.timestamp() * 1000)
    if isinstance(time, bool) or not isinstance(time, int):
        raise TypeError(f"a window store time must be int ms or an aware datetime, got {time!r}")
    return time


class TypedWindowStore(WindowStore):
    def __init__(self, bytes_store: WindowBytesStore, key_serde: Serde[Any] | None, value_serde: Serde[Any] | None,
                 *, window_size_ms: int, retain_duplicates: bool = False, logging_enabled: bool = True,
                 caching_enabled: bool = False, logs_record_headers: bool = False) -> None:
        self.name = bytes_store.name
        self.logs_record_headers = logs_record_headers
        """The changelog records carry the headers of the record being processed (a stream-stream join's side)."""
        self.window_size_ms = window_size_ms
        self.retention_ms = bytes_store.retention_ms
        self.retain_duplicates = retain_duplicates
        self.logging_enabled = logging_enabled
        self.caching_enabled = caching_enabled
        self._cache: CachingWindowBytesStore | None = None
        self._bytes = bytes_store
        self._below: WindowBytesStore = bytes_store
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._topic: str | None = None
        self._format: ValueFormat | None = None
        self._serialize_key: Any = self._not_open
        self._deserialize_key: Any = self._not_open
        self._seqnum = 0
        self.position = Position()
        """The input offsets this store has seen (`streamlet.stores.position`)."""
        self.last_write: Any = None
        """The record context of the last write not yet folded into `position`."""
        self._record_context: Any = _no_context

    # -- lifecycle ----------------------------------------------------------------------------------
    def init(self, context: StateStoreContext) -> None:
        if self.is_open:
            raise InvalidStateStoreError(f"state store {self.name!r} is already open")
        key_serde = self._key_serde or context.app_config.default_key_serde()
        value_serde = self._value_serde or context.app_config.default_value_serde()
        if key_serde is None or value_serde is None:
            which = "key" if key_serde is None else "value"
            raise ConfigError(f"window store {self.name!r} has no {which} serde: give one to the store builder "
                              f"(or Materialized) or set default.{which}.serde")
        self._topic = changelog_topic(context.application_id, self.name)
        self._format = self._value_format(value_serde, self._topic)
        self._bytes.open(context)
        self._below = self._change_logging(self._bytes, context) if self.logging_enabled else self._bytes
        budget = context.cache_budget_bytes(self.name) if self.caching_enabled else 0
        # As Kafka Streams, a zero cache size means no caching at all (each update forwarded as made).
        self._cache = CachingWindowBytesStore(self._below, context, budget) if budget > 0 else None
        if self._cache is not None:
            self._below = self._cache
        key_serializer: Serializer[Any] = key_serde.serializer
        key_deserializer: Deserializer[Any] = key_serde.deserializer
        self._serialize_key = key_serializer.serialize
        self._deserialize_key = key_deserializer.deserialize
        self._record_context = context.record_context_reader()
        context.register(self, self._restore, logged=self.logging_enabled,
                         with_headers=self._restores_with_headers())

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return PlainValueFormat(serde, topic)

    def _restores_with_headers(self) -> bool:
        """True when the changelog records' headers are part of the stored values (a store with headers)."""
        return False

    def _change_logging(self, store: WindowBytesStore, context: StateStoreContext) -> WindowBytesStore:
        if self.logs_record_headers:
            return ChangeLoggingWindowBytesStoreWithRecordHeaders(store, context, self.retain_duplicates)
        return ChangeLoggingWindowBytesStore(store, context, self.retain_duplicates)

    def _restore(self, entries: list[ChangelogEntry]) -> None:
        """Apply one batch read back from the changelog, straight into the bytes store."""
        assert self._format is not None
        from_changelog = self._format.from_changelog
        writes = []
        for data, value, timestamp in entries:
            key, start, seqnum = from_store_key(data)
            writes.append((key, start, seqnum, from_changelog(value, timestamp)))
        self._bytes.put_all(writes)

    def flush(self) -> None:
        self._below.flush()

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Flushed windows go to `listener(Windowed(key, window), new, old, timestamp, headers)`."""
        if self._cache is None:
            return False
        assert self._format is not None
        decode, deserialize_key, topic = self._format.decode, self._deserialize_key, self._topic
        size, plain = self.window_size_ms, self._plain_listener(listener)

        def forward(key: bytes, start: int, new: bytes | None, old: bytes | None, timestamp: int,
                    headers: Headers) -> None:
            plain(Windowed(deserialize_key(topic, key), TimeWindow.for_size(start, size)),
                  None if new is None else decode(new), None if old is None else decode(old), timestamp, headers)

        self._cache.set_flush_listener(forward, send_old_values)
        return True

    def _plain_listener(self, listener: FlushListener) -> FlushListener:
        return listener

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        elif self._bytes.is_open:
            self._bytes.close()
        self._serialize_key = self._deserialize_key = self._not_open

    @property
    def persistent(self) -> bool:
        return self._bytes.persistent

    @property
    def is_open(self) -> bool:
        return self._bytes.is_open and self._format is not None

    def _not_open(self, _topic: str | None, _data: Any) -> NoReturn:
        state = "closed" if self._format is not None else "not initialized yet"
        raise InvalidStateStoreError(f"window store {self.name!r} is {state}")

    # -- window operations --------------------------------------------------------------------------
    def _key(self, key: Any) -> bytes:
        data: bytes | None = self._serialize_key(self._topic, key)
        if data is None:
            raise StreamsError(f"window store {self.name!r}: a key must not be None")
        return data

    def serialized_key(self, key: Any) -> bytes:
        """`key` as this store keeps it (what orders the windows of one start time)."""
        return self._key(key)

    def put(self, key: Any, value: Any, window_start: int) -> None:
        data = self._key(key)
        self.last_write = self._record_context()
        if self.retain_duplicates:
            if value is None:
                # As Kafka Streams: a store of duplicates has nothing a None could delete, but its
                # changelog still gets the None (with a sequence number of the changelog's own).
                if self.logging_enabled and self._cache is None:
                    self._below.put(data, _millis(window_start), 0, None)
                return
            self._seqnum = seqnum = (self._seqnum + 1) & _SEQNUM_MASK
        else:
            seqnum = 0
        assert self._format is not None
        encoded = None if value is None else self._format.encode(value)
        self._below.put(data, _millis(window_start), seqnum, encoded)

    def fetch(self, key: Any, time_from: Any, time_to: Any = None) -> Any:
        data = self._key(key)
        assert self._format is not None
        if time_to is None:
            start = _millis(time_from)
            if not self.retain_duplicates:
                found = self._below.get(data, start, 0)
                return None if found is None else self._format.decode(found)
            first = next(self._below.fetch(data, start, start), None)
            return None if first is None else self._format.decode(first[3])
        decode = self._format.decode
        entries = self._below.fetch(data, _millis(time_from), _millis(time_to))
        return StoreKeyValueIterator(KeyValue(start, decode(value)) for _k, start, _s, value in entries)

    def fetch_list(self, key: Any, time_from: int, time_to: int) -> list[KeyValue]:
        assert self._format is not None
        decode = self._format.decode
        return [_new(KeyValue, (start, decode(value)))
                for _k, start, _s, value in self._below.fetch(self._key(key), _millis(time_from), _millis(time_to))]

    def fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator[Any, Any]:
        return StoreKeyValueIterator(self._windowed(self._below.fetch_all(_millis(time_from), _millis(time_to))))

    def all(self) -> KeyValueIterator[Any, Any]:
        return self.fetch_all(0, MAX_TIME)

    def fetch_all_in_store_order(self, time_from: int, time_to: int) -> list[KeyValue]:
        """`fetch_all` in the order Kafka Streams' store of this kind iterates: a persistent (segmented) store
        segment by segment, then by key bytes, then start; an in-memory or time-ordered store by start, then
        key bytes (what `fetch_all` answers). What IQv2's `WindowRangeQuery` returns."""
        found = list(self.fetch_all(time_from, time_to))
        interval = getattr(self._bytes, "segment_interval_ms", None)
        if self.persistent and interval and not getattr(self._bytes, "time_ordered", False):
            serialize = self._key
            found.sort(key=lambda kv: (kv.key.window.start // interval, serialize(kv.key.key), kv.key.window.start))
        return found

    def fetch_all_time_ordered(self, time_from: int, time_to: int) -> list[KeyValue]:
        """The windows starting in [time_from, time_to] by start, then key bytes: as Kafka Streams' time-ordered
        window store answers `fetchAll` for an `on_window_close` aggregation. Its cache iterator makes the
        cached windows it reads the most recently used: above a persistent (time-ordered) store only those
        from `time_from` to the first past `time_to` (`refresh_time_ordered`); above an in-memory store,
        which Kafka Streams caches with its plain window cache, every cached window."""
        found = list(self._windowed(self._below.fetch_all(time_from, time_to)))
        serialize = self._key
        found.sort(key=lambda kv: (kv.key.window.start, serialize(kv.key.key)))
        if self._cache is not None:
            interval = getattr(self._bytes, "segment_interval_ms", None)
            if interval is not None and getattr(self._bytes, "time_ordered", False):
                self._cache.refresh_time_ordered(time_from, time_to, int(interval))
            else:
                self._cache.refresh_all()
        return found

    def _windowed(self, entries: Iterator[WindowEntry]) -> Iterator[KeyValue]:
        assert self._format is not None
        deserialize_key, topic, decode = self._deserialize_key, self._topic, self._format.decode
        size = self.window_size_ms
        for key, start, _seqnum, value in entries:
            yield KeyValue(Windowed(deserialize_key(topic, key), TimeWindow.for_size(start, size)), decode(value))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, persistent={self.persistent})"


class TypedTimestampedWindowStore(TypedWindowStore, TimestampedWindowStore):
    """Values are `ValueAndTimestamp`; stored with an 8-byte timestamp prefix, logged plain."""

    def _value_format(self, serde: Serde[Any], topic: str) -> ValueFormat:
        return TimestampedValueFormat(serde, topic)

    def _change_logging(self, store: WindowBytesStore, context: StateStoreContext) -> WindowBytesStore:
        return ChangeLoggingTimestampedWindowBytesStore(store, context, self.retain_duplicates)

    def _plain_listener(self, listener: FlushListener) -> FlushListener:
        """Plain values downstream, timestamped with the new value's timestamp (Kafka Streams'
        timestamped cache flush listener); a delete keeps its record's timestamp."""

        def forward(key: Any, new: Any, old: Any, timestamp: int, headers: Headers) -> None:
            listener(key, None if new is None else new.value, None if old is None else old.value,
                     timestamp if new is None else new.timestamp, headers)

        return forward

    def put(self, key: Any, value: Any, window_start: int) -> None:
        if value is not None and not isinstance(value, ValueAndTimestamp):
            raise TypeError(f"a timestamped window store takes ValueAndTimestamp values, got {type(value).__name__}")
        super().put(key, None if value is None or value.value is None else value, window_start)
