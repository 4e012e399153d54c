"""`SparkKeyValueBytesStore`: a key-value bytes store over Spark's state, read lazily, written per batch.

Why a buffer in front of Spark's state: each state call crosses to the JVM (~50 µs), and a task runs
for one micro-batch. A key is read from Spark at most once per batch; writes stay in `_dirty` until the
task flushes (its commit at the end of the batch), which writes each changed key once. A range scan
needs every key in byte order, which Spark's MapState cannot give: the first scan in a batch reads the
whole map once, and later reads in the batch are served from that copy.

The same copy serves a batch that reads many keys of a small store (WordCount over a vocabulary: most
keys every batch): the scan streams the map in Arrow batches, far cheaper than a round trip per key.
The store keeps an approximate entry count in its meta entry for that choice; after `scan_after`
single reads in a batch it scans when the store holds at most `SCAN_RATIO` times as many entries as
it has read one by one. Writes it cannot place (a key written without being read) count as new, so the
estimate errs high and a large store is never scanned by mistake.

The meta entry also keeps how many keys the last batch that wrote asked for. A batch whose
predecessor met the rule above scans at its first single read instead of after `scan_after` more round
trips: micro-batches of one task read alike (WordCount's counting task read 512 keys one by one before
its scan, in every batch; 10,000 round trips of a 250,000-line run).
"""

from __future__ import annotations

import struct

from streamlet.stores.api import BytesIterator, BytesWriteBatch, KeyValueBytesStore, QueuedWriteBatch, StateStoreContext
from streamlet.stores.spark.state import SparkStoreState

_MISSING = object()
_COUNT = struct.Struct(">q")
_META = struct.Struct(">qq")
"""(approximate entry count, keys the last writing batch looked up); older meta entries hold the count only."""
SCAN_AFTER = 256
SCAN_RATIO = 4


class SparkKeyValueBytesStore(KeyValueBytesStore):
    def __init__(self, name: str, state: SparkStoreState, scan_after: int = SCAN_AFTER) -> None:
        self.name = name
        self._state = state
        self._scan_after = max(1, scan_after)
        self._read: dict[bytes, bytes | None] = {}  # what Spark held at the batch start (None: absent)
        self._dirty: dict[bytes, bytes | None] = {}  # written since the last flush (None: deleted)
        self._read_all = False
        self._single_reads = 0
        self._count: int | None = None  # entries Spark holds (approximate), once read from the meta entry
        self._looked_up_before = 0  # keys the last writing batch looked up (from the meta entry)
        self._meta: bytes | None = None  # the meta entry as read
        self._early_scan: bool | None = None  # whether this batch scans at its first single read
        self._asked: set[bytes] = set()  # keys `get` was asked for in this batch (and found unwritten)
        self._open = False

    def open(self, context: StateStoreContext) -> None:
        self._open = True

    def _entries(self) -> int:
        if self._count is None:
            meta = self._meta = self._state.meta()
            if meta is not None and len(meta) == _META.size:
                self._count, self._looked_up_before = _META.unpack(meta)
            else:
                self._count = _COUNT.unpack(meta)[0] if meta else 0
        return self._count

    def _worth_scanning(self, reads: int) -> bool:
        """After `reads` single reads (in this batch, or the last one's lookups), whether the store is small
        enough to read whole."""
        return reads >= self._scan_after and self._entries() <= SCAN_RATIO * reads

    def _scans_early(self) -> bool:
        if self._early_scan is None:
            self._entries()
            self._early_scan = self._worth_scanning(self._looked_up_before)
        return self._early_scan

    def get(self, key: bytes) -> bytes | None:
        value = self._dirty.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        self._asked.add(key)
        value = self._read.get(key, _MISSING)
        if value is _MISSING:
            reads = self._single_reads
            if not self._read_all and ((reads == 0 and self._scans_early())
                                       or (reads and reads % self._scan_after == 0 and self._worth_scanning(reads))):
                self._current()  # reads every entry once; `key` is among them or absent
                return self.get(key)
            if self._read_all:
                value = None
            else:
                self._single_reads += 1
                value = self._state.get(key)
            self._read[key] = value
        return value  # type: ignore[return-value]

    def put(self, key: bytes, value: bytes | None) -> None:
        self._dirty[key] = value

    def delete(self, key: bytes) -> None:
        self._dirty[key] = None

    def batch(self) -> BytesWriteBatch:
        return QueuedWriteBatch(self.put)

    def _current(self) -> dict[bytes, bytes]:
        if not self._read_all:
            self._read = dict.fromkeys(self._read)  # a key read before but absent from the scan is absent
            for key, value in self._state.scan():
                self._read[key] = value
            self._read_all = True
            self._count = sum(1 for v in self._read.values() if v is not None)
        merged: dict[bytes, bytes] = {}
        for source in (self._read, self._dirty):
            for key, maybe in source.items():
                if maybe is None:
                    merged.pop(key, None)
                else:
                    merged[key] = maybe
        return merged

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        # A snapshot, as the other backends give: writes during the iteration are not seen.
        current = self._current()
        keys = sorted(k for k in current
                      if (from_key is None or k >= from_key) and (to_key is None or k <= to_key))
        return BytesIterator(iter([(k, current[k]) for k in keys]))

    def approximate_num_entries(self) -> int:
        return len(self._current())

    def flush(self) -> None:
        if not self._dirty:
            return
        change = 0
        for key, value in self._dirty.items():
            before = self._read.get(key, None if self._read_all else _MISSING)
            known = before is not _MISSING
            if value is not None and (before is None or not known):
                change += 1  # a new key, or one written unread: counted as new (the estimate errs high)
            elif value is None and known and before is not None:
                change -= 1
        self._state.write(self._dirty)
        self._read.update(self._dirty)
        self._dirty = {}
        entries = max(0, self._entries() + change)
        self._count = entries
        # The keys asked for, not those a scan brought in: a batch that scanned early for two keys
        # must not make the next one scan too.
        meta = _META.pack(entries, len(self._asked))
        if meta != self._meta:
            self._state.set_meta(meta)
            self._meta = meta

    def close(self) -> None:
        self._read, self._dirty, self._read_all, self._open = {}, {}, False, False
        self._single_reads, self._count, self._looked_up_before, self._meta = 0, None, 0, None
        self._early_scan, self._asked = None, set()

    @property
    def persistent(self) -> bool:
        return True  # Spark's checkpoint keeps it

    @property
    def is_open(self) -> bool:
        return self._open
