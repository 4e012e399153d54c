"""`SegmentedVersionedBytesStore`: Kafka Streams' versioned store layout, kept in a key-value bytes store.

Kafka Streams' `RocksDBVersionedStore` keeps each key's latest version in a "latest value store" and
its older versions in segments, filed by validTo timestamp, every segment a key prefix of one RocksDB
instance (`LogicalKeyValueSegments`). That layout maps onto any key-value bytes store, so there is one
implementation of it here, over LevelDB (`leveldb/versioned.py`) or memory (`memory/versioned.py`):

- `b"\\x00" + key` -> the latest version: 8-byte timestamp, then the value (never a tombstone);
- `b"\\x01" + segment id (8 bytes, big-endian) + key` -> the key's older versions whose validTo falls
  in that segment, as one `SegmentRow`.

The rules are Kafka Streams': a write older than `stream time - history_retention` (the grace period)
is refused; a read as of a time older than that finds only a latest version that already applied; a
segment is dropped whole once its newest possible validTo is out of the retention, so reads within
the retention stay exact; a tombstone without a version to end is kept as a degenerate row; a restore
batch is applied with stream time already moved to the batch's end, so versions that would expire
by then are never written. The put procedure below follows `RocksDBVersionedStore.doPut` step for
step, because what a put returns and what a later read finds depend on its details.

One difference, on purpose: reopening a persistent store finds its segments on disk, where Kafka
Streams' store forgets them until a write touches them again (its history reads miss until then).
Stream time is not kept across restarts, as in Kafka Streams: it starts again from the first write or
restored record.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, insort
from collections.abc import Iterator

from streamlet.errors import StreamsError
from streamlet.stores.api import ChangelogEntry, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.versioned.api import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedBytesStore,
    VersionedRecord,
)
from streamlet.stores.versioned.segment_row import SegmentRow, min_timestamp, next_timestamp
from streamlet.stores.wrapping import _StoreLayer

NO_TIMESTAMP = -1
"""Stream time before the first write (Kafka's `ConsumerRecord.NO_TIMESTAMP`)."""

_LATEST = b"\x00"
_SEGMENT = b"\x01"
_ID = struct.Struct(">q")
_TIMESTAMP = struct.Struct(">q")
_SENTINEL = PUT_RETURN_CODE_NOT_PUT
"""No version found yet during a put: the new version goes to the latest value store."""


def default_segment_interval_ms(history_retention_ms: int) -> int:
    """Kafka Streams' default segment size for a history retention (a performance knob only)."""
    if history_retention_ms <= 60_000:
        return max(history_retention_ms // 3, 2_000)
    if history_retention_ms <= 300_000:
        return max(history_retention_ms // 5, 20_000)
    if history_retention_ms <= 3_600_000:
        return max(history_retention_ms // 12, 60_000)
    return max(history_retention_ms // 24, 300_000)


def _java_div(a: int, b: int) -> int:
    """Java's long division (truncating toward zero): segment ids of times before 0."""
    return a // b if a >= 0 else -((-a) // b)


class _Writes:
    """Where a put reads and writes: the store itself, or (restoring) a buffer over it flushed as one
    batch at the end, which reads its own writes first (Kafka Streams' restore write buffer)."""

    def __init__(self, inner: KeyValueBytesStore, buffered: bool) -> None:
        self._inner = inner
        self._buffer: dict[bytes, bytes | None] | None = {} if buffered else None

    def get(self, key: bytes) -> bytes | None:
        if self._buffer is not None and key in self._buffer:
            return self._buffer[key]
        return self._inner.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        if self._buffer is not None:
            self._buffer[key] = value
        elif value is None:
            self._inner.delete(key)
        else:
            self._inner.put(key, value)

    def flush(self) -> None:
        if self._buffer:
            with self._inner.batch() as batch:
                batch.put_all(list(self._buffer.items()))
            self._buffer = {}


class SegmentedVersionedBytesStore(_StoreLayer[KeyValueBytesStore], VersionedBytesStore):
    def __init__(self, inner: KeyValueBytesStore, history_retention_ms: int, segment_interval_ms: int) -> None:
        self.name = inner.name
        self.inner = inner
        self.history_retention_ms = history_retention_ms
        self.grace_period_ms = history_retention_ms  # Kafka Streams: the history retention doubles as grace
        self.segment_interval_ms = segment_interval_ms
        self.observed_stream_time = NO_TIMESTAMP
        self._segments: list[int] = []  # live segment ids, ascending
        self._direct = _Writes(inner, buffered=False)

    # -- lifecycle ----------------------------------------------------------------------------------
    def open(self, context: StateStoreContext) -> None:
        self.inner.open(context)
        self.observed_stream_time = NO_TIMESTAMP
        self._segments = list(self._segments_on_disk())

    def _segments_on_disk(self) -> Iterator[int]:
        start = _SEGMENT
        while True:
            with self.inner.range(start, None) as found:
                first = next(found, None)
            if first is None or not first[0].startswith(_SEGMENT):
                return
            segment_id = _ID.unpack_from(first[0], 1)[0]
            yield segment_id
            start = _SEGMENT + _ID.pack(segment_id + 1)

    # -- segments -----------------------------------------------------------------------------------
    def segment_id(self, timestamp: int) -> int:
        return _java_div(timestamp, self.segment_interval_ms)

    def _segment_key(self, segment_id: int, key: bytes) -> bytes:
        return _SEGMENT + _ID.pack(segment_id) + key

    def _live_segment(self, segment_id: int, stream_time: int) -> int | None:
        """The segment, registered if new, unless it is already out of the retention (None)."""
        if segment_id < self.segment_id(stream_time - self.history_retention_ms):
            return None
        if segment_id < 0:
            raise StreamsError(f"versioned store {self.name!r}: timestamps before "
                               f"-{self.segment_interval_ms} ms have no segment")
        at = bisect_left(self._segments, segment_id)
        if at == len(self._segments) or self._segments[at] != segment_id:
            insort(self._segments, segment_id)
        return segment_id

    def _row_at(self, writes: _Writes, stream_time: int, key: bytes, time: int) -> tuple[bytes, bytes | None] | None:
        """The key and current bytes of the key's row in the segment of `time`; None when that segment is
        already out of the retention (what would go there is not kept)."""
        segment = self._live_segment(self.segment_id(time), stream_time)
        if segment is None:
            return None
        row_key = self._segment_key(segment, key)
        return row_key, writes.get(row_key)

    def _segments_from(self, timestamp: int) -> list[int]:
        """The live segments that may hold versions valid at or after `timestamp`, newest first."""
        first = bisect_left(self._segments, self.segment_id(timestamp))
        return self._segments[first:][::-1]

    def _drop_expired_segments(self, stream_time: int) -> None:
        oldest_live = self.segment_id(stream_time - self.history_retention_ms)
        while self._segments and self._segments[0] < oldest_live:
            prefix = _SEGMENT + _ID.pack(self._segments.pop(0))
            with self.inner.range(prefix, None) as found:
                doomed: list[tuple[bytes, bytes | None]] = []
                for key, _value in found:
                    if not key.startswith(prefix):
                        break
                    doomed.append((key, None))
            with self.inner.batch() as batch:
                batch.put_all(doomed)

    # -- reads --------------------------------------------------------------------------------------
    def get(self, key: bytes) -> VersionedRecord | None:
        latest = self.inner.get(_LATEST + key)
        if latest is None:
            return None
        return VersionedRecord(latest[8:], _TIMESTAMP.unpack_from(latest)[0])

    def get_as_of(self, key: bytes, as_of_timestamp: int) -> VersionedRecord | None:
        latest = self.inner.get(_LATEST + key)
        if latest is not None:
            latest_timestamp = _TIMESTAMP.unpack_from(latest)[0]
            if latest_timestamp <= as_of_timestamp:
                return VersionedRecord(latest[8:], latest_timestamp)
        if as_of_timestamp < self.observed_stream_time - self.history_retention_ms:
            return None  # past the history retention: only a latest version that applied then counts
        for segment_id in self._segments_from(as_of_timestamp):
            raw = self.inner.get(self._segment_key(segment_id, key))
            if raw is None:
                continue
            if next_timestamp(raw) <= as_of_timestamp:
                return None  # this row (and every older one) ends before the time asked for
            if min_timestamp(raw) > as_of_timestamp:
                continue
            found = SegmentRow.decode(raw).find(as_of_timestamp)
            return None if found.value is None else VersionedRecord(found.value, found.valid_from, found.valid_to)
        return None

    def get_versions(self, key: bytes, from_time: int, to_time: int) -> list[VersionedRecord]:
        found: list[VersionedRecord] = []
        latest = self.inner.get(_LATEST + key)
        if latest is not None:
            latest_timestamp = _TIMESTAMP.unpack_from(latest)[0]
            if latest_timestamp <= to_time:
                found.append(VersionedRecord(latest[8:], latest_timestamp))
        for segment_id in self._segments_from(from_time):  # segments whose versions end after from_time
            raw = self.inner.get(self._segment_key(segment_id, key))
            if raw is None or min_timestamp(raw) > to_time:
                continue
            valid_to = next_timestamp(raw)
            for valid_from, value in SegmentRow.decode(raw).versions:
                if value is not None and valid_from <= to_time and valid_to > from_time:
                    found.append(VersionedRecord(value, valid_from, valid_to))
                valid_to = valid_from
        found.sort(key=lambda record: record.timestamp, reverse=True)
        return found

    # -- writes -------------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        if timestamp < self.observed_stream_time - self.grace_period_ms:
            return PUT_RETURN_CODE_NOT_PUT  # Kafka Streams logs "Skipping record for expired put"
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        return self._put(self._direct, self.observed_stream_time, key, value, timestamp)

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        if timestamp < self.observed_stream_time - self.grace_period_ms:
            return None
        existing = self.get_as_of(key, timestamp)
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        self._put(self._direct, self.observed_stream_time, key, None, timestamp)
        return existing

    def restore(self, entries: list[ChangelogEntry]) -> None:
        """Kafka Streams' batch restore: stream time moves to the batch's end first, so versions that
        would be out of the retention by then are not written at all."""
        end_of_batch = max([self.observed_stream_time, *(timestamp for _k, _v, timestamp in entries)])
        writes = _Writes(self.inner, buffered=True)
        for key, value, timestamp in entries:
            if timestamp < self.observed_stream_time - self.grace_period_ms:
                continue  # it was refused when it was written, too
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
            self._put(writes, end_of_batch, key, value, timestamp)
        writes.flush()

    def _put(self, writes: _Writes, stream_time: int, key: bytes, value: bytes | None, timestamp: int) -> int:
        """Kafka Streams' `doPut`: the latest value store first, then the segments newest first, then
        wherever the search left the new version. Returns its validTo, or one of the put codes."""
        self._drop_expired_segments(stream_time)
        complete, found = self._put_latest(writes, stream_time, key, value, timestamp)
        if not complete:
            complete, found = self._put_segments(writes, stream_time, key, value, timestamp, found)
        if not complete:
            found = self._finish_put(writes, stream_time, key, value, timestamp, found)
        return PUT_RETURN_CODE_VALID_TO_UNDEFINED if found == _SENTINEL else found

    def _put_latest(self, writes: _Writes, stream_time: int, key: bytes, value: bytes | None,
                    timestamp: int) -> tuple[bool, int]:
        latest_key = _LATEST + key
        latest = writes.get(latest_key)
        if latest is None:
            return False, _SENTINEL
        latest_timestamp = _TIMESTAMP.unpack_from(latest)[0]
        if timestamp < latest_timestamp:
            return False, latest_timestamp
        if timestamp > latest_timestamp:  # the old latest moves into the segment of its new validTo
            at = self._row_at(writes, stream_time, key, timestamp)
            if at is not None:
                row_key, raw = at
                if raw is None:
                    row = SegmentRow.with_version(latest[8:], latest_timestamp, timestamp)
                else:
                    row = SegmentRow.decode(raw)
                    row.insert_as_latest(latest_timestamp, timestamp, latest[8:])
                writes.put(row_key, row.encode())
        writes.put(latest_key, None if value is None else _TIMESTAMP.pack(timestamp) + value)
        return True, _SENTINEL

    def _put_segments(self, writes: _Writes, stream_time: int, key: bytes, value: bytes | None, timestamp: int,
                      found: int) -> tuple[bool, int]:
        for segment in self._segments_from(timestamp):
            row_key = self._segment_key(segment, key)
            raw = writes.get(row_key)
            if raw is None:
                continue
            if next_timestamp(raw) <= timestamp:
                return False, found  # nothing here or older is affected: finish where `found` says
            oldest = min_timestamp(raw)
            if oldest <= timestamp:
                return True, self._put_into_row(writes, stream_time, segment, row_key, raw, key, value, timestamp)
            if oldest < stream_time - self.history_retention_ms:
                return True, PUT_RETURN_CODE_NOT_PUT  # (restoring) it would be out of the retention
            found = oldest
        return False, found

    def _put_into_row(self, writes: _Writes, stream_time: int, segment: int, row_key: bytes, raw: bytes,
                      key: bytes, value: bytes | None, timestamp: int) -> int:
        """The new version falls inside an existing row: replace, split, or move the split-off older
        version to an older segment when its new validTo (our timestamp) belongs there."""
        row = SegmentRow.decode(raw)
        hit = row.find(timestamp)
        if hit.valid_from == timestamp:
            row.update(timestamp, value, hit.position)
        elif self.segment_id(timestamp) != segment:
            at = self._row_at(writes, stream_time, key, timestamp)
            if at is not None:
                older_key, older_raw = at
                if older_raw is None:
                    older_row = SegmentRow.with_version(hit.value, hit.valid_from, timestamp)
                else:
                    older_row = SegmentRow.decode(older_raw)
                    older_row.insert_as_latest(hit.valid_from, timestamp, hit.value)
                writes.put(older_key, older_row.encode())
            row.update(timestamp, value, hit.position)
        else:
            row.insert(timestamp, value, hit.position)
        writes.put(row_key, row.encode())
        return hit.valid_to

    def _finish_put(self, writes: _Writes, stream_time: int, key: bytes, value: bytes | None, timestamp: int,
                    found: int) -> int:
        if found == _SENTINEL:  # nothing newer exists
            if value is not None:
                writes.put(_LATEST + key, _TIMESTAMP.pack(timestamp) + value)
                return found
            # a tombstone never goes to the latest value store: into its own time's segment instead
            at = self._row_at(writes, stream_time, key, timestamp)
            if at is None:
                return PUT_RETURN_CODE_NOT_PUT
            row_key, raw = at
            if raw is None:
                writes.put(row_key, SegmentRow.with_version(None, timestamp, timestamp).encode())
            else:
                row_next = next_timestamp(raw)
                if row_next == timestamp:
                    return found  # the row already ends with a deletion at this time
                row = SegmentRow.decode(raw)
                row.insert_as_latest(row_next, timestamp, None)
                writes.put(row_key, row.encode())
            return found
        # the new version is valid until `found`: it goes to that time's segment, first or last in its row
        at = self._row_at(writes, stream_time, key, found)
        if at is None:
            return PUT_RETURN_CODE_NOT_PUT
        row_key, raw = at
        if raw is None:
            row = SegmentRow.with_version(value, timestamp, found)
        else:
            row = SegmentRow.decode(raw)
            if next_timestamp(raw) <= timestamp:
                row.insert_as_latest(timestamp, found, value)
            else:
                row.insert_as_earliest(timestamp, value)
        writes.put(row_key, row.encode())
        return found
