"""`LevelDBKeyValueBytesStore`: bytes -> bytes in LevelDB, in `state_dir / name`.

LevelDB's default comparator orders keys as unsigned bytes, which is exactly the order the API
promises, so scans are plain LevelDB iterators (each reads a consistent snapshot).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import plyvel

from streamlet.errors import InvalidStateStoreError, StreamsError
from streamlet.stores.api import BytesIterator, BytesWriteBatch, KeyValueBytesStore, StateStoreContext


def open_database(context: StateStoreContext, name: str, kind: str = "store") -> Any:
    """Open (creating if needed) the LevelDB database of store `name` in `context.state_dir / name`."""
    path = context.state_dir / name
    path.mkdir(parents=True, exist_ok=True)
    try:
        return plyvel.DB(str(path), create_if_missing=True)
    except plyvel.Error as exc:
        raise StreamsError(f"cannot open the LevelDB {kind} {name!r} at {path}: {exc}") from exc


def sync(db: Any) -> None:
    """fdatasync LevelDB's log (an empty synced batch).

    The runtime writes the checkpoint right after a store's flush; without the sync an OS crash could
    leave a checkpoint that claims writes the store lost.
    """
    db.write_batch(sync=True).write()


class LevelDBKeyValueBytesStore(KeyValueBytesStore):
    def __init__(self, name: str) -> None:
        self.name = name
        self._db: Any = None
        self._unsynced_writes = False

    def open(self, context: StateStoreContext) -> None:
        self._db = open_database(context, self.name)

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self._db.delete(key)
        else:
            self._db.put(key, value)
        self._unsynced_writes = True

    def delete(self, key: bytes) -> None:
        self._db.delete(key)
        self._unsynced_writes = True

    def batch(self) -> BytesWriteBatch:
        return _LevelDBWriteBatch(self)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BytesIterator:
        if from_key is not None and to_key is not None and from_key > to_key:
            return BytesIterator(iter(()))
        raw = self._db.iterator(start=from_key, stop=to_key, include_stop=True)
        entries = _entries(raw, self.name)

        def release() -> None:
            entries.close()
            raw.close()  # the generator's `finally` does not run if it never started

        return BytesIterator(entries, release)

    def approximate_num_entries(self) -> int:
        """Counts the keys (LevelDB keeps no count): O(n), meant for queries and tests, not hot paths."""
        with self._db.iterator(include_value=False) as keys:
            return sum(1 for _ in keys)

    def flush(self) -> None:
        """Sync LevelDB's log if anything was written since the last flush (see `sync`)."""
        if self._unsynced_writes:
            sync(self._db)
            self._unsynced_writes = False

    def close(self) -> None:
        if self._db is not None:
            self._db.close()  # plyvel also closes iterators still open on it
            self._db = None

    @property
    def persistent(self) -> bool:
        return True

    @property
    def is_open(self) -> bool:
        return self._db is not None

    def _write_batch(self, writes: list[tuple[bytes, bytes | None]]) -> None:
        with self._db.write_batch() as wb:
            for key, value in writes:
                if value is None:
                    wb.delete(key)
                else:
                    wb.put(key, value)
        self._unsynced_writes = True


def _entries(raw: Any, name: str) -> Generator[tuple[bytes, bytes], None, None]:
    """Yield from plyvel's iterator and release it when exhausted, closed or garbage collected."""
    try:
        yield from raw
    except RuntimeError as exc:  # plyvel: "Database or iterator is closed"
        raise InvalidStateStoreError(f"store {name!r} was closed while being iterated") from exc
    finally:
        raw.close()


class _LevelDBWriteBatch(BytesWriteBatch):
    """Collects writes in Python and hands them to one LevelDB write batch on `write()`."""

    def __init__(self, store: LevelDBKeyValueBytesStore) -> None:
        self._store = store
        self._writes: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes | None) -> None:
        self._writes.append((key, value))

    def write(self) -> None:
        if self._writes:
            self._store._write_batch(self._writes)
            self._writes = []
