"""`LevelDBWindowBytesStore`: windows in one LevelDB database, grouped into time segments.

Why segments: expiry must drop old windows without scanning the live ones. As in Kafka Streams'
segmented RocksDB stores, window starts are grouped into segments of `max(retention / 2, 1 min)`;
here a segment is a key prefix (its id, 8 bytes big-endian) in one database instead of a database of
its own. A local key is `segment id + key + window start (8 bytes) + seqnum (4 bytes)`, so a key's
windows in a segment are one contiguous range. Expiry deletes whole segments once every window in
them is expired; expired windows in the oldest live segment are hidden from reads and dropped on write.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, insort
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plyvel

from streamlet.stores.api import StateStoreContext
from streamlet.stores.leveldb.keyvalue import corrupted, open_staged, sync
from streamlet.stores.leveldb.staging import StagedDatabase
from streamlet.stores.window.api import WindowBytesStore, WindowEntry, WindowWrite
from streamlet.stores.window.key_schema import SUFFIX_SIZE, to_store_key
from streamlet.stores.window.retention import RetentionClock

_SEGMENT = struct.Struct(">q")
_SUFFIX = struct.Struct(">qi")
MIN_SEGMENT_INTERVAL_MS = 60_000
_MAX_SEQNUM = 0x7FFFFFFF


def segment_interval(retention_ms: int) -> int:
    """Kafka Streams' default for windowed aggregations' stores."""
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)


class LevelDBWindowBytesStore(WindowBytesStore):
    """`time_first`: behave as Kafka Streams' time-ordered window store (what its `on_window_close`
    aggregations keep their windows in), whose reads still see windows starting exactly at the latest
    start minus the retention period."""

    def __init__(self, name: str, retention_ms: int, time_first: bool = False) -> None:
        self.name = name
        self.retention_ms = retention_ms
        self._time_first = time_first
        self._interval = segment_interval(retention_ms)
        self._clock = RetentionClock(retention_ms)
        self._segments: list[int] = []
        self._db: Any = None
        self._path = Path()
        self._unsynced_writes = False

    def open(self, context: StateStoreContext) -> None:
        self._db = open_staged(context, self.name, "window store")
        self._path = context.state_dir / self.name
        context.register_sync(self._sync)
        self._segments = self._existing_segments()

    def _existing_segments(self) -> list[int]:
        """Segment ids on disk: seek to the first key, then past its segment, and so on."""
        found: list[int] = []
        start = b""
        while True:
            with self._db.iterator(start=start, include_value=False) as keys:
                first = next(keys, None)
            if first is None:
                return found
            segment = _SEGMENT.unpack_from(first)[0]
            found.append(segment)
            start = _SEGMENT.pack(segment + 1)

    # -- writes -------------------------------------------------------------------------------------
    def _local_key(self, key: bytes, window_start: int, seqnum: int) -> bytes:
        segment = window_start // self._interval
        if not self._segments or self._segments[-1] != segment:
            index = bisect_left(self._segments, segment)
            if index == len(self._segments) or self._segments[index] != segment:
                insort(self._segments, segment)
        return _SEGMENT.pack(segment) + to_store_key(key, window_start, seqnum)

    def put(self, key: bytes, window_start: int, seqnum: int, value: bytes | None) -> None:
        clock = self._clock
        moved = clock.advance(window_start)
        if not clock.expired(window_start):
            local = self._local_key(key, window_start, seqnum)
            if value is None:
                self._db.delete(local)
            else:
                self._db.put(local, value)
            self._unsynced_writes = True
        if moved:
            self._drop_expired_segments()

    def put_all(self, writes: list[WindowWrite]) -> None:
        clock = self._clock
        moved = False
        with self._db.write_batch() as batch:
            for key, start, seqnum, value in writes:
                moved = clock.advance(start) or moved
                if clock.expired(start):
                    continue
                local = self._local_key(key, start, seqnum)
                if value is None:
                    batch.delete(local)
                else:
                    batch.put(local, value)
        self._unsynced_writes = True
        if moved:
            self._drop_expired_segments()

    def _drop_expired_segments(self) -> None:
        first_live = self._clock.min_live // self._interval
        segments = self._segments
        while segments and segments[0] < first_live:
            prefix = _SEGMENT.pack(segments.pop(0))
            if isinstance(self._db, StagedDatabase):
                self._db.drop_prefix(prefix)  # under exactly-once: with the commit of the writes so far
                continue
            with self._db.write_batch() as batch, self._db.iterator(prefix=prefix, include_value=False) as keys:
                for local in keys:
                    batch.delete(local)

    @property
    def segment_interval_ms(self) -> int:
        """The span of window starts one segment holds (Kafka Streams' caching layer above a time-ordered store
        walks its cache segment by segment in the same spans)."""
        return self._interval

    @property
    def time_ordered(self) -> bool:
        """Whether this is the time-ordered store of an `on_window_close` aggregation (see the class docstring)."""
        return self._time_first

    # -- reads --------------------------------------------------------------------------------------
    def _read_floor(self) -> int:
        """The earliest window start reads return."""
        clock = self._clock
        return clock.observed - self.retention_ms if self._time_first else clock.min_live

    def get(self, key: bytes, window_start: int, seqnum: int) -> bytes | None:
        if window_start < self._read_floor():
            return None
        try:
            value: bytes | None = self._db.get(
                _SEGMENT.pack(window_start // self._interval) + to_store_key(key, window_start, seqnum))
        except (plyvel.CorruptionError, plyvel.IOError) as exc:
            corrupted(self._path, self.name, exc)
        return value

    def _segments_between(self, time_from: int, time_to: int) -> list[int]:
        low, high = time_from // self._interval, time_to // self._interval
        return [s for s in self._segments if low <= s <= high]

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        time_from = max(time_from, self._read_floor())
        if time_from > time_to:
            return iter(())
        width = _SEGMENT.size + len(key) + SUFFIX_SIZE
        found: list[WindowEntry] = []
        for segment in self._segments_between(time_from, time_to):
            prefix = _SEGMENT.pack(segment) + key
            with self._db.iterator(start=prefix + _SUFFIX.pack(time_from, 0),
                                   stop=prefix + _SUFFIX.pack(time_to, _MAX_SEQNUM), include_stop=True) as it:
                for local, value in it:
                    if len(local) == width:  # a longer key that merely starts with `key` is not ours
                        start, seqnum = _SUFFIX.unpack_from(local, width - SUFFIX_SIZE)
                        found.append((key, start, seqnum, value))
        return iter(found)

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        time_from = max(time_from, self._read_floor())
        found: list[WindowEntry] = []
        for segment in self._segments_between(time_from, time_to):
            with self._db.iterator(prefix=_SEGMENT.pack(segment)) as it:
                for local, value in it:
                    start, seqnum = _SUFFIX.unpack_from(local, len(local) - SUFFIX_SIZE)
                    if time_from <= start <= time_to:
                        found.append((local[_SEGMENT.size:-SUFFIX_SIZE], start, seqnum, value))
        found.sort(key=lambda entry: (entry[1], entry[0], entry[2]))
        return iter(found)

    @property
    def observed_stream_time(self) -> int:
        return self._clock.observed

    # -- lifecycle ----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Nothing is held above LevelDB; durability is `_sync`'s, at checkpoints."""

    def _sync(self) -> None:
        """Sync LevelDB's log if anything was written since the last sync (see `leveldb.store.sync`)."""
        if self._db is not None and self._unsynced_writes:
            sync(self._db)
            self._unsynced_writes = False

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def persistent(self) -> bool:
        return True

    @property
    def is_open(self) -> bool:
        return self._db is not None
