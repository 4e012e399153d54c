"""`StagedDatabase`: a LevelDB database that, under exactly-once, holds only committed data.

Why: a task closed dirty under exactly-once (a kill -9, a fenced or aborted transaction) used to wipe
its stores and restore them from their changelogs in full, because LevelDB held writes whose
changelog records were never committed. Here, as Kafka Streams' KIP-892 and KIP-1035 do it:

- While a task runs (`staging` on), the writes of its open transaction are staged in memory, never
  written to LevelDB. Reads see them (read-your-writes): `get` looks at the staged writes first, and
  iterators merge them, in byte order, with LevelDB's.
- A commit first seals what was staged (`seal`, at the task's flush, when the changelog records of
  those writes are in the transaction) and then, once the transaction is committed, writes the sealed
  writes to LevelDB in one write batch together with the changelog offset they bring the store to
  (`commit`), under a reserved key (`META_KEY`). LevelDB applies a write batch atomically, also after
  a crash, so the database always holds exactly the changelog up to the offset it records.
- A dirty close discards the staged writes (`discard`); nothing needs wiping. A restarted task opens
  the store, reads the offset (`committed_offset`) and restores only the changelog after it.

Writes that are committed already (restoring from a changelog, a standby, a global store) go
straight to LevelDB (`staging` off); the store is then ahead of its recorded offset, which is safe:
replaying a changelog from an earlier offset writes the same values again.

The reserved key is hidden from every read: an iterator whose range covers it reads LevelDB in two
pieces around it. A store writing that exact key under exactly-once gets an error.

Memory: the staged writes are counted in bytes; past the limit the store asks for an early commit
(Kafka Streams' `statestore.uncommitted.max.bytes`), after which they are written out.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

from streamlet.errors import StreamsError
from streamlet.stores.sorted_keys import SortedKeyIndex

META_KEY = b"\x00\x00\x00streamlet\x00committed-changelog-offset\x00\x00\x00"
"""Where a store keeps the changelog offset its committed content reaches (8 bytes, big-endian)."""

_OFFSET = struct.Struct(">q")
_NOT_STAGED = object()
Staged = dict[bytes, bytes | None]  # key -> value, None: deleted


def read_committed_offset(db: Any) -> int | None:
    """The changelog offset recorded in plyvel database `db`, or None."""
    raw = db.get(META_KEY)
    return None if raw is None else int(_OFFSET.unpack(raw)[0])


def _prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with `prefix` (None: there is none)."""
    trimmed = prefix.rstrip(b"\xff")
    return trimmed[:-1] + bytes([trimmed[-1] + 1]) if trimmed else None


class StagedDatabase:
    """A plyvel database as the LevelDB stores use it (`get`, `put`, `delete`, `write_batch`, `iterator`),
    whose writes are staged in memory while `staging` is on, and written to LevelDB with the changelog
    offset they reach only when their transaction has committed (see the module docstring)."""

    def __init__(self, db: Any, limit_bytes: int = 0, on_full: Callable[[], None] | None = None) -> None:
        self.raw = db
        self.staging = False
        self.limit_bytes = limit_bytes
        """Past this many staged bytes `on_full` is called (0: never)."""
        self.on_full = on_full
        self._view: Staged = {}  # the newest staged value of every staged key, for reads
        self._index: SortedKeyIndex | None = None  # the keys of `_view` in order, built by the first iterator
        self._index_changes = 0  # additions and removals told to the index since the last iterator
        self._current: Staged = {}  # staged since the last `seal`
        self._current_drops: list[bytes] = []  # key prefixes dropped since the last `seal`
        self._current_bytes = 0
        self._sealed: list[tuple[int, Staged, list[bytes], int]] = []  # (generation, writes, drops, bytes)
        self._asked = False

    # -- reads --------------------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        view = self._view
        if view:
            value = view.get(key, _NOT_STAGED)
            if value is not _NOT_STAGED:
                return value  # type: ignore[return-value]
        if key == META_KEY:
            return None
        found: bytes | None = self.raw.get(key)
        return found

    def iterator(self, start: bytes | None = None, stop: bytes | None = None, *, include_start: bool = True,
                 include_stop: bool = False, prefix: bytes | None = None, include_value: bool = True) -> Any:
        """As plyvel's `DB.iterator` (forward only), over LevelDB and the staged writes, without `META_KEY`."""
        if prefix is not None:
            start, stop, include_start, include_stop = prefix, _prefix_end(prefix), True, False
        raw = self._raw_iterator(start, stop, include_start, include_stop, include_value)
        if not self._view:
            return raw
        staged = self._staged_between(start, stop, include_start, include_stop)
        if not staged:
            return raw
        return _MergedIterator(raw, staged, include_value)

    def _raw_iterator(self, start: bytes | None, stop: bytes | None, include_start: bool, include_stop: bool,
                      include_value: bool) -> Any:
        db = self.raw
        meta = META_KEY
        covers = ((start is None or start < meta or (include_start and start == meta))
                  and (stop is None or meta < stop or (include_stop and stop == meta)))
        if not covers:
            return db.iterator(start=start, stop=stop, include_start=include_start, include_stop=include_stop,
                               include_value=include_value)
        below = db.iterator(start=start, stop=meta, include_start=include_start, include_stop=False,
                            include_value=include_value)
        above = db.iterator(start=meta, stop=stop, include_start=False, include_stop=include_stop,
                            include_value=include_value)
        return _ChainedIterator(below, above)

    def _staged_between(self, start: bytes | None, stop: bytes | None, include_start: bool,
                        include_stop: bool) -> list[tuple[bytes, bytes | None]]:
        index = self._index
        if index is None:
            index = self._index = SortedKeyIndex()
            for key in self._view:
                index.add(key)
        self._index_changes = 0
        keys = index.between(start, stop)
        if keys and not include_start and keys[0] == start:
            keys = keys[1:]
        if keys and not include_stop and keys[-1] == stop:
            keys = keys[:-1]
        view = self._view
        return [(key, view[key]) for key in keys]

    # -- writes -------------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes) -> None:
        if self.staging:
            self._stage(key, value)
        else:
            self.raw.put(key, value)

    def delete(self, key: bytes) -> None:
        if self.staging:
            self._stage(key, None)
        else:
            self.raw.delete(key)

    def write_batch(self, **options: Any) -> Any:
        """A write batch: plyvel's own when not staging (or when asked for options such as `sync`)."""
        if options or not self.staging:
            return self.raw.write_batch(**options)
        return _StagingBatch(self)

    def _stage(self, key: bytes, value: bytes | None) -> None:
        self.stage_all([(key, value)])

    def stage_all(self, writes: list[tuple[bytes, bytes | None]]) -> None:
        """Stage `writes` (key, value or None to delete) in order: a write batch's, or one write."""
        view, current, index = self._view, self._current, self._index
        meta = META_KEY
        size = 0
        for key, value in writes:
            if key == meta:
                raise StreamsError("a store wrote the key streamlet reserves for its changelog offset")
            if index is not None and key not in view:
                index.add(key)
                self._index_changes += 1
            view[key] = value
            current[key] = value
            size += len(key) if value is None else len(key) + len(value)
        self._current_bytes += size
        if index is not None and self._index_changes > 2 * len(view) + 1024:
            self._index = None  # stale-heavy: building it again at the next iterator is cheaper
        if self.limit_bytes and not self._asked and self.uncommitted_bytes > self.limit_bytes:
            self._asked = True
            if self.on_full is not None:
                self.on_full()

    def drop_prefix(self, prefix: bytes) -> None:
        """Delete every key starting with `prefix` (an expired window segment): now when not staging, else
        with the commit of the current writes (reads must not look there meanwhile)."""
        if self.staging:
            self._current_drops.append(prefix)
            return
        db = self.raw
        with db.write_batch() as batch, db.iterator(prefix=prefix, include_value=False) as keys:
            for key in keys:
                batch.delete(key)

    @property
    def uncommitted_bytes(self) -> int:
        """Approximate bytes of the staged writes (keys and values as written, repeats counted)."""
        return self._current_bytes + sum(entry[3] for entry in self._sealed)

    # -- transactions -------------------------------------------------------------------------------
    def seal(self, generation: int) -> None:
        """The writes staged so far belong to the transaction being committed as `generation`."""
        if self._current or self._current_drops:
            self._sealed.append((generation, self._current, self._current_drops, self._current_bytes))
            self._current, self._current_drops, self._current_bytes = {}, [], 0

    def commit(self, generation: int | None, offset: int | None) -> None:
        """The transactions up to `generation` (None: all sealed) committed, bringing the changelog to
        `offset` (None: unknown, it did not move): write their writes and the offset in one batch."""
        applied = [entry for entry in self._sealed if generation is None or entry[0] <= generation]
        if not applied and (offset is None or offset == read_committed_offset(self.raw)):
            return
        self._sealed = self._sealed[len(applied):]
        db = self.raw
        with db.write_batch() as batch:
            put, delete = batch.put, batch.delete
            for _, writes, drops, _ in applied:
                for key, value in writes.items():
                    if value is None:
                        delete(key)
                    else:
                        put(key, value)
                for prefix in drops:
                    with db.iterator(prefix=prefix, include_value=False) as keys:
                        for key in keys:
                            delete(key)
                    for key in writes:
                        if key.startswith(prefix):
                            delete(key)
            if offset is not None:
                put(META_KEY, _OFFSET.pack(offset))
        self._forget(applied)

    def _forget(self, applied: list[tuple[int, Staged, list[bytes], int]]) -> None:
        """Drop from the read view the keys whose newest staged value is now in LevelDB."""
        if not self._sealed and not self._current:  # the usual commit: everything staged is in LevelDB now
            self._view = {}
            self._index = None
            self._index_changes = 0
        else:
            later = [entry[1] for entry in self._sealed] + [self._current]
            view, index = self._view, self._index
            for _, writes, _, _ in applied:
                for key in writes:
                    if key in view and not any(key in newer for newer in later):
                        del view[key]
                        if index is not None:
                            index.discard(key)
                            self._index_changes += 1
        if self.uncommitted_bytes <= self.limit_bytes:
            self._asked = False

    def record_offset(self, offset: int) -> None:
        """Record that LevelDB holds the changelog up to `offset` (after a restore wrote it directly)."""
        self.raw.put(META_KEY, _OFFSET.pack(offset))

    def committed_offset(self) -> int | None:
        return read_committed_offset(self.raw)

    def discard(self) -> None:
        """Forget every staged write (the transactions they belong to did not, or will not, commit)."""
        self._view = {}
        self._index = None
        self._index_changes = 0
        self._current, self._current_drops, self._current_bytes = {}, [], 0
        self._sealed = []
        self._asked = False

    def close(self) -> None:
        self.discard()
        self.raw.close()

    def get_property(self, name: bytes) -> Any:
        return self.raw.get_property(name)


class _StagingBatch:
    """plyvel's write batch interface; stages its writes when the `with` block ends, as plyvel writes its."""

    def __init__(self, db: StagedDatabase) -> None:
        self._db = db
        self._writes: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes) -> None:
        self._writes.append((key, value))

    def delete(self, key: bytes) -> None:
        self._writes.append((key, None))

    def write(self) -> None:
        writes, self._writes = self._writes, []
        self._db.stage_all(writes)

    def __enter__(self) -> _StagingBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.write()


class _ChainedIterator:
    """Two plyvel iterators read one after the other (a range read in two pieces around `META_KEY`)."""

    def __init__(self, first: Any, second: Any) -> None:
        self._parts = (first, second)
        self._items: Iterator[Any] = chain(first, second)

    def __iter__(self) -> _ChainedIterator:
        return self

    def __next__(self) -> Any:
        return next(self._items)

    def close(self) -> None:
        for part in self._parts:
            part.close()

    def __enter__(self) -> _ChainedIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _MergedIterator:
    """LevelDB's entries in a range merged with the staged writes in it (a snapshot of them, taken when
    the iterator was made): a staged value replaces LevelDB's, a staged delete hides it."""

    def __init__(self, raw: Any, staged: list[tuple[bytes, bytes | None]], include_value: bool) -> None:
        self._raw = raw
        self._items = _merge(raw, staged, include_value)

    def __iter__(self) -> _MergedIterator:
        return self

    def __next__(self) -> Any:
        return next(self._items)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _MergedIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _merge(raw: Any, staged: list[tuple[bytes, bytes | None]], include_value: bool) -> Iterator[Any]:
    i, n = 0, len(staged)
    for item in raw:
        key = item[0] if include_value else item
        while i < n and staged[i][0] < key:
            skey, svalue = staged[i]
            i += 1
            if svalue is not None:
                yield (skey, svalue) if include_value else skey
        if i < n and staged[i][0] == key:
            svalue = staged[i][1]
            i += 1
            if svalue is not None:
                yield (key, svalue) if include_value else key
            continue
        yield item
    for skey, svalue in staged[i:]:
        if svalue is not None:
            yield (skey, svalue) if include_value else skey
