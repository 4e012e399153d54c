"""The buffer of a stream-table join with a grace period: stream records waiting in time order.

Kafka Streams' `RocksDBTimeOrderedKeyValueBuffer` (KIP-923), kept in a key-value bytes store of
either backend (LevelDB or memory, as the joined table's store) under the time-first keys of
`buffer_value.py`, so iterating the store is iterating the records in (timestamp, key bytes,
sequence number) order, Kafka Streams' eviction order. Its rules, which a user sees in the output:

- The buffer's stream time is the largest timestamp of the records put into it (records the join
  dropped, for a null key or value, do not count), starting at -1 whenever the store is opened, and
  raised by each changelog record read back when it is restored. It is not the task's stream time.
- `put` refuses a record older than stream time minus the grace period (the join then joins it at
  once); otherwise the record is kept, under a sequence number counted from 1 since the store opened.
- `evict` hands over, oldest first, every record at or before stream time minus the grace period,
  removing each (a tombstone in the changelog) after the callback has joined it.

Each put and removal goes to the changelog as it happens, with Kafka Streams' key and value bytes.
Two deliberate differences from Kafka Streams 4.4.0 (tests/fidelity/KAFKA_STREAMS_4_DIFFERENCES.md):
restoring reads the keys as the time-first keys they were written as (4.4.0 reads them with the
key-first window schema, which scrambles them), and eviction always scans from the oldest entry
(4.4.0 starts at a remembered minimum timestamp that a reopened buffer can set past entries it still
holds, which then never leave).
"""

from __future__ import annotations

from collections.abc import Callable

from streamlet.errors import InvalidStateStoreError
from streamlet.record import Headers
from streamlet.stores.api import ChangelogEntry, StateStore, StateStoreContext
from streamlet.stores.builders import DEFAULT_CHANGELOG_CONFIG, ConfigurableStoreBuilder
from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueBytesStoreSupplier
from streamlet.stores.keyvalue.changelogging import ChangeLoggingKeyValueBytesStore
from streamlet.stores.timeordered.buffer_value import (
    TIME_FIRST_PREFIX,
    BufferedRecord,
    buffer_key,
    decode,
    encode_changelog_value,
    key_timestamp,
    time_bound,
)

_MAX_SEQNUM = 0x7FFFFFFF


class TimeOrderedKeyValueBuffer(StateStore):
    """A stream-table join's grace-period buffer (see the module docstring); opened by the runtime."""

    def __init__(self, name: str, inner: KeyValueBytesStore, grace_ms: int, logging_enabled: bool) -> None:
        self.name = name
        self.grace_ms = grace_ms
        self.logging_enabled = logging_enabled
        self._inner = inner
        self._store: KeyValueBytesStore = inner
        self._stream_time = -1
        self._seqnum = 0
        self._open = False

    # -- lifecycle ----------------------------------------------------------------------------------
    def init(self, context: StateStoreContext) -> None:
        if self._open:
            raise InvalidStateStoreError(f"state store {self.name!r} is already open")
        self._inner.open(context)
        self._store = ChangeLoggingKeyValueBytesStore(self._inner, context) if self.logging_enabled else self._inner
        self._stream_time = -1
        self._seqnum = 0
        self._open = True
        context.register(self, self._restore, logged=self.logging_enabled)

    def _restore(self, entries: list[ChangelogEntry]) -> None:
        batch = self._inner.batch()
        for key, value, _timestamp in entries:
            self._stream_time = max(self._stream_time, key_timestamp(key))
            batch.put(key, value)
        batch.write()

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._inner.close()

    @property
    def persistent(self) -> bool:
        return self._inner.persistent

    @property
    def is_open(self) -> bool:
        return self._open

    # -- buffer operations --------------------------------------------------------------------------
    @property
    def stream_time(self) -> int:
        """The largest timestamp put into (or restored to) the buffer since it was opened; -1 before."""
        return self._stream_time

    def put(self, key: bytes, value: bytes, timestamp: int, offset: int, topic: str | None, partition: int,
            headers: Headers) -> bool:
        """Keep one stream record; False (nothing kept) when it is older than stream time minus the grace."""
        if self._stream_time - self.grace_ms > timestamp:
            return False
        self._seqnum = (self._seqnum + 1) & _MAX_SEQNUM
        self._store.put(buffer_key(key, timestamp, self._seqnum),
                        encode_changelog_value(value, timestamp, offset, topic, partition, headers))
        if timestamp > self._stream_time:
            self._stream_time = timestamp
        return True

    def evict(self, emit: Callable[[BufferedRecord], None]) -> None:
        """Hand over, oldest first, each record at or before stream time minus the grace, then remove it."""
        limit = self._stream_time - self.grace_ms
        if limit < 0:
            return
        store = self._store
        for key, data in self._inner.range_list(TIME_FIRST_PREFIX, time_bound(limit)):
            emit(decode(key, data))
            store.delete(key)

    def num_records(self) -> int:
        """How many records wait in the buffer."""
        return self._inner.approximate_num_entries()


class TimeOrderedKeyValueBufferBuilder(ConfigurableStoreBuilder):
    """Builds a task's join buffer on a key-value bytes store supplier (LevelDB or memory); logged
    (a compacted changelog, `<application.id>-<name>-changelog`) unless switched off."""

    def __init__(self, supplier: KeyValueBytesStoreSupplier, grace_ms: int) -> None:
        self.supplier = supplier
        self.name = supplier.name
        self.grace_ms = grace_ms
        self.persistent = supplier.persistent
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = dict(DEFAULT_CHANGELOG_CONFIG)

    def build(self) -> TimeOrderedKeyValueBuffer:
        return TimeOrderedKeyValueBuffer(self.name, self.supplier.get(), self.grace_ms, self.logging_enabled)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.supplier!r}, grace_ms={self.grace_ms})"
