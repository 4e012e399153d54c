"""`RetainingSessionBytesStore`: session retention, as each of Kafka Streams' session stores has it.

It sits right on the bytes store (below the change-logging layer and the cache, so what it drops is
neither logged nor forwarded), keyed by the session key schema (key, end, start). Its stream time is
the latest session end written to it. Kafka Streams' two backends expire differently, and a session
aggregation can see the difference, so both are kept:

- reads (both backends) never return a session whose end is at or before `stream time - retention`:
  such a session is not merged with new records (unless the record cache above still holds it);
- persistent (RocksDB there, LevelDB here): sessions live in segments of `max(retention / 2, 60 s)` by
  end time; a write to a segment older than the one holding `stream time - retention` is dropped,
  and such segments are deleted when stream time moves on;
- in memory: a session whose end is at or before `stream time - retention` is dropped when written,
  and deleted before every write and read.

Over a persistent store it also keeps the set of keys the store holds, in byte order (every write reaches
the store through this layer, restoration included, and a reopened store is scanned at `open` anyway):
a session aggregation looks its key's sessions up on every record, and most lookups, and the reads of a
cache flush for keys never written below, find nothing there, which the key set answers without opening
a LevelDB cursor (a fifth of a session count's instructions before).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from contextlib import contextmanager

from streamlet.stores.api import BytesIterator, BytesWriteBatch, QueuedWriteBatch, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.sorted_keys import SortedKeyIndex
from streamlet.stores.wrapping import _StoreLayer

_MIN_SEGMENT_INTERVAL_MS = 60_000


def session_end(store_key: bytes) -> int:
    """The session end in a session key schema key (key bytes, end, start)."""
    return int.from_bytes(store_key[-16:-8], "big", signed=True)


def _java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero), for segment ids of negative times."""
    return a // b if a >= 0 else -((-a) // b)


class RetainingSessionBytesStore(_StoreLayer[KeyValueBytesStore], KeyValueBytesStore):
    def __init__(self, inner: KeyValueBytesStore, retention_ms: int) -> None:
        self.name = inner.name
        self.inner = inner
        self.retention_ms = retention_ms
        self._segment_ms = max(retention_ms // 2, _MIN_SEGMENT_INTERVAL_MS) if inner.persistent else None
        self._observed = -1
        self._ends: list[tuple[int, bytes]] = []  # a heap of (end, key) of what the store may hold
        self._listing_by_end = False
        # The keys a persistent store holds (see the module docstring): a set, and the same keys in order.
        self._stored: set[bytes] | None = set() if inner.persistent else None
        self._stored_order = SortedKeyIndex()

    def open(self, context: StateStoreContext) -> None:
        self.inner.open(context)
        self._ends = []
        if self._stored is not None:
            self._stored, self._stored_order = set(), SortedKeyIndex()
        with self.inner.range(None, None) as stored:  # a reopened persistent store
            for key, _value in stored:
                self._track(key)
                self._note_stored(key)

    def _note_stored(self, key: bytes) -> None:
        stored = self._stored
        if stored is not None and key not in stored:
            stored.add(key)
            self._stored_order.add(key)

    def _delete(self, key: bytes) -> None:
        self.inner.delete(key)
        stored = self._stored
        if stored is not None and key in stored:
            stored.remove(key)
            self._stored_order.discard(key)

    def _track(self, key: bytes) -> None:
        end = session_end(key)
        heapq.heappush(self._ends, (end, key))
        if end > self._observed:
            self._observed = end

    def _visible(self, end: int) -> bool:
        if self._listing_by_end:
            return not self._expired(end)
        return end > self._observed - self.retention_ms

    @contextmanager
    def listing_by_end(self) -> Iterator[None]:
        """While open, reads also return sessions past retention that are not deleted yet (persistent: in a
        live segment): what Kafka Streams' time-ordered session store lists by end time."""
        self._listing_by_end = True
        try:
            yield
        finally:
            self._listing_by_end = False

    def _expired(self, end: int) -> bool:
        oldest_live = self._observed - self.retention_ms
        if self._segment_ms is None:
            return end <= oldest_live
        return _java_div(end, self._segment_ms) < _java_div(oldest_live, self._segment_ms)

    def _purge(self) -> None:
        ends = self._ends
        while ends and self._expired(ends[0][0]):
            self._delete(heapq.heappop(ends)[1])  # a key stays expired: its end is part of it

    # -- writes -------------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self._delete(key)
            return
        if self._segment_ms is None:
            self._purge()
        end = session_end(key)
        if end > self._observed:
            self._observed = end
        if self._expired(end):
            return  # Kafka Streams logs "Skipping record for expired segment"
        self.inner.put(key, value)
        self._note_stored(key)
        heapq.heappush(self._ends, (end, key))
        if self._segment_ms is not None:
            self._purge()

    def delete(self, key: bytes) -> None:
        self._delete(key)

    def batch(self) -> BytesWriteBatch:
        return QueuedWriteBatch(self.put)

    # -- reads --------------------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        if self._segment_ms is None:
            self._purge()
        stored = self._stored
        if stored is not None and key not in stored:
            return None
        return self.inner.get(key) if self._visible(session_end(key)) else None

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        if self._segment_ms is None:
            self._purge()
        found = self.inner.range(from_key, to_key)
        visible = self._visible

        def live() -> Iterator[tuple[bytes, bytes]]:
            for key, value in found:
                if visible(session_end(key)):
                    yield key, value

        return BytesIterator(live(), found.close)

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, bytes]]:
        if self._segment_ms is None:
            self._purge()
        if self._stored is not None and not self._stored_order.any_between(from_key, to_key):
            return []
        visible = self._visible
        return [kv for kv in self.inner.range_list(from_key, to_key) if visible(session_end(kv[0]))]

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()
