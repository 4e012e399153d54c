"""`InMemoryWindowBytesStore`: windows in dicts by start, the starts kept sorted for range reads.

Why by start first: reads ask for a key over a time range, and expiry drops everything before a
time, so the outer index is the window start (a sorted list, expired starts popped from the front)
and each start holds its keys' values. Nothing survives a close: with logging on, the runtime
rebuilds it from the changelog, which is why it registers as non-persistent.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator

from streamlet.stores.api import StateStoreContext
from streamlet.stores.window.api import WindowBytesStore, WindowEntry
from streamlet.stores.window.retention import RetentionClock


class InMemoryWindowBytesStore(WindowBytesStore):
    def __init__(self, name: str, retention_ms: int) -> None:
        self.name = name
        self.retention_ms = retention_ms
        self._clock = RetentionClock(retention_ms)
        self._starts: list[int] = []
        self._windows: dict[int, dict[bytes, dict[int, bytes]]] = {}
        self._open = False

    def open(self, context: StateStoreContext) -> None:
        self._open = True

    def put(self, key: bytes, window_start: int, seqnum: int, value: bytes | None) -> None:
        clock = self._clock
        if clock.advance(window_start):
            self._expire()
        if clock.expired(window_start):
            return
        windows = self._windows
        keys = windows.get(window_start)
        if value is None:
            if keys is not None:
                values = keys.get(key)
                if values is not None:
                    values.pop(seqnum, None)
                    if not values:
                        del keys[key]
            return
        if keys is None:
            keys = windows[window_start] = {}
            insort(self._starts, window_start)
        values = keys.get(key)
        if values is None:
            keys[key] = {seqnum: value}
        else:
            values[seqnum] = value

    def _expire(self) -> None:
        starts, min_live = self._starts, self._clock.min_live
        cut = bisect_left(starts, min_live)
        for start in starts[:cut]:
            del self._windows[start]
        del starts[:cut]

    def get(self, key: bytes, window_start: int, seqnum: int) -> bytes | None:
        if self._clock.expired(window_start):
            return None
        keys = self._windows.get(window_start)
        if keys is None:
            return None
        values = keys.get(key)
        return None if values is None else values.get(seqnum)

    def _starts_between(self, time_from: int, time_to: int) -> list[int]:
        starts = self._starts
        low = bisect_left(starts, max(time_from, self._clock.min_live))
        return starts[low:bisect_right(starts, time_to)]

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        # Copied out when the read starts, so writes during iteration are not seen (as LevelDB's snapshot).
        found: list[WindowEntry] = []
        windows = self._windows
        for start in self._starts_between(time_from, time_to):
            values = windows[start].get(key)
            if values:
                found.extend((key, start, seqnum, values[seqnum]) for seqnum in sorted(values))
        return iter(found)

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[WindowEntry]:
        found: list[WindowEntry] = []
        windows = self._windows
        for start in self._starts_between(time_from, time_to):
            keys = windows[start]
            for key in sorted(keys):
                values = keys[key]
                found.extend((key, start, seqnum, values[seqnum]) for seqnum in sorted(values))
        return iter(found)

    @property
    def observed_stream_time(self) -> int:
        return self._clock.observed

    def flush(self) -> None:
        """Nothing to make durable: the changelog is this store's only copy outside memory."""

    def close(self) -> None:
        self._starts = []
        self._windows = {}
        self._clock = RetentionClock(self.retention_ms)
        self._open = False

    @property
    def persistent(self) -> bool:
        return False

    @property
    def is_open(self) -> bool:
        return self._open
