"""`SparkWindowBytesStore`: a window bytes store over Spark's state, one map entry per record key.

Why per record key: the hot reads of a windowed aggregation and of a stream-stream join ask for one
key's windows over a time range, and Spark's MapState has no range reads. Keeping all windows of a key
in one entry makes that one state call; `fetch_all` (rare: suppression, queries) scans the map.

Retention follows the shared `RetentionClock`, whose position is kept in the store's meta entry.
Expired windows are hidden at once and dropped from a key's entry when that key is written; keys not
written again are swept by a full scan each time the clock has moved a whole retention period on.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from streamlet.stores.api import StateStoreContext
from streamlet.stores.spark.state import SparkStoreState
from streamlet.stores.window.api import WindowBytesStore, WindowEntry
from streamlet.stores.window.retention import RetentionClock

_HEAD = struct.Struct(">qiI")  # window start, seqnum, value length; then the value's bytes
_META = struct.Struct(">qq")  # the clock's observed window start, min_live at the last sweep

Windows = dict[tuple[int, int], bytes]
"""One key's windows: (window start, seqnum) -> value."""


def encode_windows(windows: Windows) -> bytes:
    parts: list[bytes] = []
    for (start, seqnum), value in sorted(windows.items()):
        parts.append(_HEAD.pack(start, seqnum, len(value)))
        parts.append(value)
    return b"".join(parts)


def decode_windows(data: bytes) -> Windows:
    windows: Windows = {}
    offset, size, head = 0, len(data), _HEAD.size
    while offset < size:
        start, seqnum, length = _HEAD.unpack_from(data, offset)
        offset += head
        windows[(start, seqnum)] = data[offset:offset + length]
        offset += length
    return windows


class SparkWindowBytesStore(WindowBytesStore):
    def __init__(self, name: str, retention_ms: int, state: SparkStoreState) -> None:
        self.name = name
        self.retention_ms = retention_ms
        self._state = state
        self._clock = RetentionClock(retention_ms)
        self._swept = 0
        self._meta: bytes | None = None  # as last read from or written to the state
        self._keys: dict[bytes, Windows] = {}  # keys read or written this batch
        self._dirty: set[bytes] = set()
        self._open = False

    def open(self, context: StateStoreContext) -> None:
        meta = self._meta = self._state.meta()
        if meta is not None:
            observed, self._swept = _META.unpack(meta)
            if observed >= 0:
                self._clock.advance(observed)
        self._open = True

    def _windows(self, key: bytes) -> Windows:
        windows = self._keys.get(key)
        if windows is None:
            data = self._state.get(key)
            windows = self._keys[key] = decode_windows(data) if data else {}
        return windows

    def put(self, key: bytes, window_start: int, seqnum: int, value: bytes | None) -> None:
        clock = self._clock
        clock.advance(window_start)
        if clock.expired(window_start):
            return
        windows = self._windows(key)
        if value is None:
            if windows.pop((window_start, seqnum), None) is None:
                return
        else:
            windows[(window_start, seqnum)] = value
        self._dirty.add(key)

    def get(self, key: bytes, window_start: int, seqnum: int) -> bytes | None:
        if self._clock.expired(window_start):
            return None
        return self._windows(key).get((window_start, seqnum))

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        low = max(time_from, self._clock.min_live)
        windows = self._windows(key)
        return iter([(key, start, seqnum, windows[(start, seqnum)]) for start, seqnum in sorted(windows)
                     if low <= start <= time_to])

    def _all_keys(self) -> dict[bytes, Windows]:
        for key, data in self._state.scan():
            if key not in self._keys:
                self._keys[key] = decode_windows(data)
        return self._keys

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        low = max(time_from, self._clock.min_live)
        found = [(start, key, seqnum, value) for key, windows in self._all_keys().items()
                 for (start, seqnum), value in windows.items() if low <= start <= time_to]
        found.sort(key=lambda entry: entry[:3])
        return iter([(key, start, seqnum, value) for start, key, seqnum, value in found])

    @property
    def observed_stream_time(self) -> int:
        return self._clock.observed

    def flush(self) -> None:
        min_live = self._clock.min_live
        if min_live - self._swept >= self.retention_ms:
            self._dirty.update(self._all_keys())  # the sweep: rewrite every key without its expired windows
            self._swept = min_live
        changes: dict[bytes, bytes | None] = {}
        for key in self._dirty:
            windows = self._keys[key]
            for start_seq in [ss for ss in windows if ss[0] < min_live]:
                del windows[start_seq]
            changes[key] = encode_windows(windows) if windows else None
        if changes:
            self._state.write(changes)
        self._dirty = set()
        meta = _META.pack(self._clock.observed, self._swept)
        if meta != self._meta:
            self._state.set_meta(meta)
            self._meta = meta

    def close(self) -> None:
        self._keys, self._dirty, self._open = {}, set(), False

    @property
    def persistent(self) -> bool:
        return True

    @property
    def is_open(self) -> bool:
        return self._open
