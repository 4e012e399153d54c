"""`LevelDBKeyValueBytesStore`: bytes -> bytes in LevelDB, in `state_dir / name`.

LevelDB's default comparator orders keys as unsigned bytes, which is exactly the order the API
promises, so scans are plain LevelDB iterators (each reads a consistent snapshot).

Corruption: a store whose files cannot be trusted raises `StateStoreCorruptedError`, and the task
wipes its local state and rebuilds it from the changelog (see `StreamTask.initialize_stores`). At
open that covers what LevelDB reports (a damaged CURRENT, MANIFEST or log: `paranoid_checks` makes a
damaged log fail the open instead of silently dropping its records) and two things LevelDB does not:
a database whose CURRENT file is gone (LevelDB would quietly create an empty one) and a table file
shorter than the MANIFEST says (plyvel's iterators then end early without an error). Corruption met
later, by a read, leaves a marker file in the store's directory so that the next open rebuilds it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator
from pathlib import Path
from typing import Any, NoReturn

import plyvel

from streamlet.config import LEVELDB_SETTABLE_OPTIONS
from streamlet.errors import InvalidStateStoreError, StateStoreCorruptedError, StreamsError
from streamlet.stores.api import BytesIterator, BytesWriteBatch, StateStoreContext
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.leveldb.staging import META_KEY, StagedDatabase

CORRUPTED_MARKER = "STREAMLET-CORRUPTED"
"""Written into a store's directory when a read met corruption: the next open rebuilds the store."""

LEVELDB_OPTIONS: dict[str, Any] = {"bloom_filter_bits": 10, "write_buffer_size": 16 * 1024 * 1024}
"""Every LevelDB store's options beyond LevelDB's defaults, as Kafka Streams sets its RocksDB stores': a bloom
filter of 10 bits per key (a read of a key the store does not hold, such as every new key of an
aggregation, is answered from the filter instead of reading a block from each level) and a 16 MiB write
buffer (4 MiB by default: fewer, larger level-0 tables and less compaction under a steady stream of
updates). Both are allocated as they fill, so an idle store costs nothing more. They are what
`leveldb.config.setter` starts from."""

_LEVELDB_HOUSEKEEPING = {"LOCK", "LOG", "LOG.old", CORRUPTED_MARKER}
_SSTABLE = re.compile(rb"^\s*(\d+):(\d+)\[", re.MULTILINE)  # `leveldb.sstables`: " number:size['first' .. 'last']"


def open_database(context: StateStoreContext, name: str, kind: str = "store") -> Any:
    """Open (creating if needed) the LevelDB database of store `name` in `context.state_dir / name`.

    Raises `StateStoreCorruptedError` when the files on disk cannot be trusted, and `StreamsError` for
    other failures (another process holds the database's lock, permissions): those are not corruption,
    and wiping a directory that another live instance uses would destroy its state."""
    path = context.state_dir / name
    options = leveldb_options(context, name)
    path.mkdir(parents=True, exist_ok=True)
    _check_before_open(path, name)
    try:
        db = plyvel.DB(str(path), create_if_missing=True, paranoid_checks=True, **options)
    except (TypeError, ValueError, OverflowError) as exc:  # only the setter's options can be of a wrong kind
        raise StreamsError(f"leveldb.config.setter set options LevelDB refuses for the {kind} {name!r} "
                           f"({exc}): {options}") from exc
    except plyvel.CorruptionError as exc:
        raise StateStoreCorruptedError(name, path, _message(exc)) from exc
    except plyvel.Error as exc:
        raise StreamsError(f"cannot open the LevelDB {kind} {name!r} at {path}: {_message(exc)}") from exc
    try:
        _check_tables(db, path, name)
    except BaseException:
        db.close()
        raise
    return db


def leveldb_options(context: StateStoreContext, name: str) -> dict[str, Any]:
    """The plyvel.DB options of store `name`: `LEVELDB_OPTIONS`, as `leveldb.config.setter` changed them."""
    options = dict(LEVELDB_OPTIONS)
    setter = context.app_config.leveldb_config_setter
    if setter is None:
        return options
    try:
        setter(name, options, context.app_config)
    except Exception as exc:
        raise StreamsError(f"leveldb.config.setter failed for store {name!r}: {type(exc).__name__}: {exc}") from exc
    unknown = sorted(set(options) - set(LEVELDB_SETTABLE_OPTIONS))
    if unknown:
        raise StreamsError(f"leveldb.config.setter set {', '.join(map(repr, unknown))} for store {name!r}; it may "
                           f"set only {', '.join(LEVELDB_SETTABLE_OPTIONS)}")
    return options


def _message(exc: BaseException) -> str:
    """plyvel's errors carry LevelDB's status as bytes."""
    arg = exc.args[0] if exc.args else exc
    return arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)


def _check_before_open(path: Path, name: str) -> None:
    if (path / CORRUPTED_MARKER).exists():
        reason = (path / CORRUPTED_MARKER).read_text(errors="replace").strip() or "an earlier read failed"
        raise StateStoreCorruptedError(name, path, f"marked corrupted by an earlier read ({reason})")
    if not (path / "CURRENT").exists():
        data = sorted(entry for entry in os.listdir(path) if entry not in _LEVELDB_HOUSEKEEPING)
        if data:
            raise StateStoreCorruptedError(name, path, f"its CURRENT file is missing but it holds {', '.join(data[:3])}"
                                           + (", ..." if len(data) > 3 else ""))


def _check_tables(db: Any, path: Path, name: str) -> None:
    """Every table the MANIFEST lists must be on disk at its full size (LevelDB checks only that it
    exists; a truncated one reads as empty through plyvel's iterators).

    LevelDB may compact in the background as soon as it opens (its log turned into a table), deleting
    tables that the listing read a moment earlier named. A table is judged only if the listing still
    names it after it was looked for: table numbers are never reused, so a table listed before and
    after its check was live throughout, and its absence or short size is real."""
    problems: dict[int, str] = {}
    for number, size in _SSTABLE.findall(_sstables(db)):
        files = [path / f"{int(number):06d}.{ext}" for ext in ("ldb", "sst")]
        actual = next((found for found in map(_size, files) if found is not None), None)
        if actual is None:
            problems[int(number)] = f"table {files[0].name} is missing"
        elif actual[1] != int(size):
            problems[int(number)] = f"table {actual[0]} has {actual[1]} bytes, not {int(size)}"
    if not problems:
        return
    still_listed = {int(number) for number, _ in _SSTABLE.findall(_sstables(db))}
    for number, problem in sorted(problems.items()):
        if number in still_listed:
            raise StateStoreCorruptedError(name, path, problem)


def _size(file: Path) -> tuple[str, int] | None:
    try:
        return file.name, file.stat().st_size
    except FileNotFoundError:
        return None


def _sstables(db: Any) -> bytes:
    listing: bytes = db.get_property(b"leveldb.sstables") or b""
    return listing


def corrupted(path: Path, name: str, exc: BaseException) -> NoReturn:
    """A read met corruption: mark the store so that the next open rebuilds it, then raise."""
    reason = _message(exc)
    try:
        (path / CORRUPTED_MARKER).write_text(reason + "\n")
    except OSError:
        pass  # the marker is a courtesy to the next open; the error below is what matters now
    raise StateStoreCorruptedError(name, path, reason) from exc


def open_staged(context: StateStoreContext, name: str, kind: str = "store") -> Any:
    """`open_database`, and under exactly-once the database wrapped in a `StagedDatabase` registered with
    the context (whose runtime turns staging on once the store is restored, see `staging.py`). Under
    at-least-once the plain database is used, without a changelog offset of exactly-once's left in it."""
    db = open_database(context, name, kind)
    if not context.app_config.exactly_once:
        if db.get(META_KEY) is not None:
            db.delete(META_KEY)
        return db
    staged = StagedDatabase(db)
    context.register_transactional(name, staged)
    return staged


def sync(db: Any) -> None:
    """fdatasync LevelDB's log (an empty synced batch).

    Writes reach LevelDB's log unsynced, which a killed process does not lose but an OS crash can.
    The runtime calls the store's sync (registered with `StateStoreContext.register_sync`) before a
    checkpoint that vouches for the writes; without it an OS crash could leave a checkpoint that
    claims writes the store lost.
    """
    db.write_batch(sync=True).write()


class LevelDBKeyValueBytesStore(KeyValueBytesStore):
    def __init__(self, name: str) -> None:
        self.name = name
        self._db: Any = None
        self._path = Path()
        self._unsynced_writes = False

    def open(self, context: StateStoreContext) -> None:
        self._db = open_staged(context, self.name)
        self._path = context.state_dir / self.name
        context.register_sync(self._sync)

    def get(self, key: bytes) -> bytes | None:
        try:
            value: bytes | None = self._db.get(key)
        except (plyvel.CorruptionError, plyvel.IOError) as exc:
            corrupted(self._path, self.name, exc)
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
        entries = _entries(raw, self.name, self._path)

        def release() -> None:
            entries.close()
            raw.close()  # the generator's `finally` does not run if it never started

        return BytesIterator(entries, release)

    def range_list(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, bytes]]:
        if from_key > to_key:
            return []
        try:
            with self._db.iterator(start=from_key, stop=to_key, include_stop=True) as raw:
                return list(raw)
        except RuntimeError as exc:  # as `_entries`
            raise InvalidStateStoreError(f"store {self.name!r} was closed while being iterated") from exc
        except (plyvel.CorruptionError, plyvel.IOError) as exc:
            corrupted(self._path, self.name, exc)

    def approximate_num_entries(self) -> int:
        """Counts the keys (LevelDB keeps no count): O(n), meant for queries and tests, not hot paths."""
        with self._db.iterator(include_value=False) as keys:
            return sum(1 for _ in keys)

    def flush(self) -> None:
        """Nothing is held above LevelDB; durability is `_sync`'s, at checkpoints."""

    def _sync(self) -> None:
        """Sync LevelDB's log if anything was written since the last sync (see `sync`)."""
        if self._db is not None and self._unsynced_writes:
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
        """One LevelDB write batch, not synced (`_sync` syncs before a checkpoint is written); under
        exactly-once, staged with the open transaction."""
        db = self._db
        if isinstance(db, StagedDatabase) and db.staging:
            db.stage_all(writes)
            self._unsynced_writes = True
            return
        with db.write_batch() as wb:
            put, delete = wb.put, wb.delete
            for key, value in writes:
                if value is None:
                    delete(key)
                else:
                    put(key, value)
        self._unsynced_writes = True


def _entries(raw: Any, name: str, path: Path) -> Generator[tuple[bytes, bytes], None, None]:
    """Yield from plyvel's iterator and release it when exhausted, closed or garbage collected."""
    try:
        yield from raw
    except RuntimeError as exc:  # plyvel: "Database or iterator is closed"
        raise InvalidStateStoreError(f"store {name!r} was closed while being iterated") from exc
    except (plyvel.CorruptionError, plyvel.IOError) as exc:
        corrupted(path, name, exc)
    finally:
        raw.close()


class _LevelDBWriteBatch(BytesWriteBatch):
    """Collects writes in Python and hands them to one LevelDB write batch on `write()`."""

    def __init__(self, store: LevelDBKeyValueBytesStore) -> None:
        self._store = store
        self._writes: list[tuple[bytes, bytes | None]] = []

    def put(self, key: bytes, value: bytes | None) -> None:
        self._writes.append((key, value))

    def put_all(self, writes: list[tuple[bytes, bytes | None]]) -> None:
        if self._writes:
            self._writes.extend(writes)
        else:
            self._writes = writes  # a restore batch: taken as it is, not copied

    def write(self) -> None:
        if self._writes:
            self._store._write_batch(self._writes)
            self._writes = []
