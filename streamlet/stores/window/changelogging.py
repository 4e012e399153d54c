"""The change-logging layer of window stores: each write also goes to the store's changelog.

Changelog keys follow Kafka Streams' window key schema (key, window start, seqnum; see
key_schema.py) so that a changelog written here restores a Java application's store and back.
A timestamped store's local values carry an 8-byte timestamp prefix; its changelog gets the plain
value bytes with that timestamp as the record timestamp, as for timestamped key-value stores.
"""

from __future__ import annotations

from collections.abc import Iterator

from streamlet.stores.api import StateStoreContext
from streamlet.stores.keyvalue.changelogging import log_headers_value
from streamlet.stores.value_formats import split_timestamped
from streamlet.stores.window.api import WindowBytesStore, WindowEntry, WindowWrite
from streamlet.stores.window.key_schema import to_store_key
from streamlet.stores.wrapping import _StoreLayer


class ChangeLoggingWindowBytesStore(_StoreLayer[WindowBytesStore], WindowBytesStore):
    """Logs every write under the current record's timestamp; reads pass straight through.

    A store that retains duplicates logs with a sequence number of its own, counting every write,
    a None too (which the store itself ignores), as Kafka Streams' change-logging window store does:
    its changelog's sequence numbers may run ahead of the store's."""

    def __init__(self, inner: WindowBytesStore, context: StateStoreContext, retain_duplicates: bool = False) -> None:
        self.name = inner.name
        self.retention_ms = inner.retention_ms
        self.inner = inner
        self._context = context
        self._log_change = context.log_change
        self._record_context = context.record_context_reader()
        self._retain_duplicates = retain_duplicates
        self._seqnum = 0

    def log(self, key: bytes, value: bytes | None) -> None:
        self._log_change(self.name, key, value, self._record_context().timestamp)

    def put(self, key: bytes, window_start: int, seqnum: int, value: bytes | None) -> None:
        if self._retain_duplicates:
            if value is not None:
                self.inner.put(key, window_start, seqnum, value)
            self._seqnum = seqnum = (self._seqnum + 1) & 0x7FFFFFFF
        else:
            self.inner.put(key, window_start, seqnum, value)
        self.log(to_store_key(key, window_start, seqnum), value)

    def put_all(self, writes: list[WindowWrite]) -> None:
        self.inner.put_all(writes)
        for key, start, seqnum, value in writes:
            self.log(to_store_key(key, start, seqnum), value)

    def get(self, key: bytes, window_start: int, seqnum: int) -> bytes | None:
        return self.inner.get(key, window_start, seqnum)

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        return self.inner.fetch(key, time_from, time_to)

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        return self.inner.fetch_all(time_from, time_to)

    @property
    def observed_stream_time(self) -> int:
        return self.inner.observed_stream_time


class ChangeLoggingWindowBytesStoreWithRecordHeaders(ChangeLoggingWindowBytesStore):
    """Logs every write under the current record's timestamp and headers: a stream-stream join's side, which
    Kafka Streams 4.4 keeps as a window store with headers (the record it holds, with that record's headers)."""

    def log(self, key: bytes, value: bytes | None) -> None:
        current = self._record_context()
        self._log_change(self.name, key, value, current.timestamp, current.headers)


class ChangeLoggingTimestampedWindowBytesStore(ChangeLoggingWindowBytesStore):
    """Logs the plain value with the timestamp of its prefix (a delete: the current record's)."""

    def log(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            super().log(key, None)
        else:
            timestamp, raw = split_timestamped(value)
            self._log_change(self.name, key, raw, timestamp)


class ChangeLoggingTimestampedWindowBytesStoreWithHeaders(ChangeLoggingWindowBytesStore):
    """A window store with headers' layer: logs the plain value with the timestamp and the headers stored before
    it (`split_headers_value`); a delete logs the current record's timestamp and headers, as Kafka Streams does."""

    def log(self, key: bytes, value: bytes | None) -> None:
        log_headers_value(self._log_change, self.name, self._record_context, key, value)
