"""The change-logging layer: every write to the bytes store also goes to the store's changelog.

It sits directly on the bytes store, under the cache, so a cache sends only what it flushes or
evicts (one update per key per commit) while an uncached store logs every update. The runtime
buffers `log_change` calls and sends them with the task's next flush; under exactly-once they are
part of the task's transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from streamlet.stores.api import BytesIterator, BytesWriteBatch, RecordContext, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.value_formats import (
    TIMESTAMP_SIZE,
    split_aggregation_headers,
    split_headers_value,
    split_timestamped,
    unpack_timestamp,
)
from streamlet.stores.wrapping import _StoreLayer


def log_headers_value(log_change: Callable[..., None], name: str, record_context: Callable[[], RecordContext],
                      key: bytes, value: bytes | None) -> None:
    """Log a value kept as `join_headers_value` bytes: the plain value bytes with the stored timestamp and headers
    as the record's; a delete with the current record's timestamp and headers, as Kafka Streams does."""
    if value is None:
        current = record_context()
        log_change(name, key, None, current.timestamp, current.headers)
    else:
        headers, timestamp, raw = split_headers_value(value)
        log_change(name, key, raw, timestamp, headers)


class ChangeLoggingKeyValueBytesStore(_StoreLayer[KeyValueBytesStore], KeyValueBytesStore):
    """Logs `(key, value, timestamp of the current record context)`; reads pass straight through."""

    def __init__(self, inner: KeyValueBytesStore, context: StateStoreContext) -> None:
        self.name = inner.name
        self.inner = inner
        self._below = inner  # `inner` is the mixin's attribute: compiled, this one is read without a look-up
        self._context = context
        self._write_change = context.changelog_writer(inner.name)
        self._record_context = context.record_context_reader()

    def log(self, key: bytes, value: bytes | None) -> None:
        self._write_change(key, value, self._record_context().timestamp)

    def get(self, key: bytes) -> bytes | None:
        return self._below.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)
        self.log(key, value)

    def delete(self, key: bytes) -> None:
        self.inner.delete(key)
        self.log(key, None)

    def batch(self) -> BytesWriteBatch:
        return _LoggingWriteBatch(self, self.inner.batch())

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        return self.inner.range(from_key, to_key)

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, bytes]]:
        return self.inner.range_list(from_key, to_key)

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()


class ChangeLoggingTimestampedKeyValueBytesStore(ChangeLoggingKeyValueBytesStore):
    """Local values carry an 8-byte timestamp prefix; the changelog gets the plain value bytes, and
    the prefix's timestamp as the record timestamp, so restoring rebuilds the same local bytes.
    A delete has no value to take a timestamp from and logs the current record's timestamp."""

    def log(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self._write_change(key, None, self._record_context().timestamp)
        elif len(value) >= TIMESTAMP_SIZE:  # `split_timestamped` inlined (once per logged write)
            self._write_change(key, value[TIMESTAMP_SIZE:], unpack_timestamp(value)[0])
        else:
            split_timestamped(value)  # raises: too short for a timestamped value


class ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders(ChangeLoggingKeyValueBytesStore):
    """Local values carry headers and a timestamp before the value (`split_headers_value`); the changelog gets the
    plain value bytes with the stored timestamp and headers as the record's. A delete logs the current record's
    timestamp and headers, as Kafka Streams does."""

    def __init__(self, inner: KeyValueBytesStore, context: StateStoreContext) -> None:
        super().__init__(inner, context)
        self._log_change = context.log_change

    def log(self, key: bytes, value: bytes | None) -> None:
        log_headers_value(self._log_change, self.name, self._record_context, key, value)


class ChangeLoggingSessionBytesStoreWithHeaders(ChangeLoggingKeyValueBytesStore):
    """A session store with headers' layer: local values carry headers before the aggregation
    (`split_aggregation_headers`); the changelog gets the plain aggregation bytes under the current record's
    timestamp with the stored headers as the record's. A delete logs the current record's timestamp and headers,
    as Kafka Streams does."""

    def __init__(self, inner: KeyValueBytesStore, context: StateStoreContext) -> None:
        super().__init__(inner, context)
        self._log_change = context.log_change

    def log(self, key: bytes, value: bytes | None) -> None:
        current = self._record_context()
        if value is None:
            self._log_change(self.name, key, None, current.timestamp, current.headers)
        else:
            headers, raw = split_aggregation_headers(value)
            self._log_change(self.name, key, raw, current.timestamp, headers)  # type: ignore[arg-type]


class _LoggingWriteBatch(BytesWriteBatch):
    """Logs each write when it is queued, so each is logged under the record context current then:
    a cache flush sets the flushed entry's context before queueing it. The writes reach the inner batch
    together, in order, at `write` (one `put_all` instead of a call per write)."""

    def __init__(self, store: ChangeLoggingKeyValueBytesStore, inner: BytesWriteBatch) -> None:
        self._store = store
        self._inner = inner
        self._writes: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes | None) -> None:
        self._writes.append((key, value))
        self._store.log(key, value)

    def write(self) -> None:
        writes = self._writes
        if writes:
            self._writes = []
            self._inner.put_all(writes)
        self._inner.write()

