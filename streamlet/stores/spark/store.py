"""`SparkKeyValueBytesStore`: a key-value bytes store over Spark's state, read lazily, written per batch.

Why a buffer in front of Spark's state: each state call crosses to the JVM (~50 µs), and a task runs
for one micro-batch. A key is read from Spark at most once per batch; writes stay in `_dirty` until the
task flushes (its commit at the end of the batch), which writes each changed key once. A range scan
needs every key in byte order, which Spark's MapState cannot give: the first scan in a batch reads the
whole map once, and later reads in the batch are served from that copy.
"""

from __future__ import annotations

from streamlet.stores.api import BytesIterator, BytesWriteBatch, KeyValueBytesStore, QueuedWriteBatch, StateStoreContext
from streamlet.stores.spark.state import SparkStoreState

_MISSING = object()


class SparkKeyValueBytesStore(KeyValueBytesStore):
    def __init__(self, name: str, state: SparkStoreState) -> None:
        self.name = name
        self._state = state
        self._read: dict[bytes, bytes | None] = {}  # what Spark held at the batch start (None: absent)
        self._dirty: dict[bytes, bytes | None] = {}  # written since the last flush (None: deleted)
        self._read_all = False
        self._open = False

    def open(self, context: StateStoreContext) -> None:
        self._open = True

    def get(self, key: bytes) -> bytes | None:
        value = self._dirty.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        value = self._read.get(key, _MISSING)
        if value is _MISSING:
            value = None if self._read_all else self._state.get(key)
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
            for key, value in self._state.scan():
                self._read[key] = value
            self._read_all = True
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
        if self._dirty:
            self._state.write(self._dirty)
            self._read.update(self._dirty)
            self._dirty = {}

    def close(self) -> None:
        self._read, self._dirty, self._read_all, self._open = {}, {}, False, False

    @property
    def persistent(self) -> bool:
        return True  # Spark's checkpoint keeps it

    @property
    def is_open(self) -> bool:
        return self._open
