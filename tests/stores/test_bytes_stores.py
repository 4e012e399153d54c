"""The bytes stores (LevelDB and in-memory): the same behaviour, checked on both."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import plyvel
import pytest

from streamlet.errors import InvalidStateStoreError
from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from tests.stores.conftest import open_bytes_store
from tests.stores.context import RecordingStateStoreContext

ORDERED_KEYS = [b"", b"\x00", b"\x00\x00", b"\x01", b"\x7f", b"\x80", b"\x80\x00", b"\xfe", b"\xff"]


@pytest.fixture
def store(make_bytes_store: Callable[[str], Any], context: RecordingStateStoreContext) -> KeyValueBytesStore:
    return open_bytes_store(make_bytes_store, context)


def fill(store: KeyValueBytesStore, keys: list[bytes]) -> None:
    for key in keys:
        store.put(key, b"v" + key)


def keys_of(it: Any) -> list[bytes]:
    with it:
        return [k for k, _ in it]


def test_put_get_overwrite_delete(store: KeyValueBytesStore) -> None:
    assert store.get(b"a") is None
    store.put(b"a", b"1")
    store.put(b"a", b"2")
    store.put(b"b", b"")
    assert store.get(b"a") == b"2"
    assert store.get(b"b") == b""  # an empty value is a value, not a delete
    store.delete(b"a")
    store.put(b"b", None)
    store.delete(b"never-there")
    assert store.get(b"a") is None and store.get(b"b") is None
    assert store.approximate_num_entries() == 0


def test_iterates_in_unsigned_byte_order(store: KeyValueBytesStore) -> None:
    fill(store, list(reversed(ORDERED_KEYS)))
    with store.all() as it:
        assert list(it) == [(k, b"v" + k) for k in ORDERED_KEYS]


@pytest.mark.parametrize(
    ("low", "high"),
    [(b"\x00", b"\x80"), (b"\x01", b"\x01"), (None, b"\x7f"), (b"\x80", None), (None, None),
     (b"\x00\x01", b"\x7f\xff"), (b"\xff\x00", None), (None, b"")],
)
def test_ranges_are_inclusive_and_none_is_open(store: KeyValueBytesStore, low: bytes | None,
                                               high: bytes | None) -> None:
    fill(store, ORDERED_KEYS)
    expected = [k for k in ORDERED_KEYS if (low is None or k >= low) and (high is None or k <= high)]
    assert keys_of(store.range(low, high)) == expected


def test_inverted_range_is_empty(store: KeyValueBytesStore) -> None:
    fill(store, ORDERED_KEYS)
    assert keys_of(store.range(b"\x80", b"\x01")) == []


def test_range_sees_deletes_and_new_keys_between_scans(store: KeyValueBytesStore) -> None:
    fill(store, [b"a", b"c", b"e"])
    assert keys_of(store.all()) == [b"a", b"c", b"e"]
    store.delete(b"c")
    store.put(b"b", b"x")
    store.put(b"c", b"back")
    store.delete(b"e")
    store.put(b"d", b"x")
    assert keys_of(store.all()) == [b"a", b"b", b"c", b"d"]
    assert store.get(b"c") == b"back"
    assert store.approximate_num_entries() == 4


def test_write_batch_applies_on_exit_and_drops_on_error(store: KeyValueBytesStore) -> None:
    store.put(b"gone", b"x")
    with store.batch() as batch:
        batch.put(b"a", b"1")
        batch.put(b"gone", None)
        assert store.get(b"a") is None  # nothing applied before the block ends
    assert store.get(b"a") == b"1" and store.get(b"gone") is None
    with pytest.raises(RuntimeError), store.batch() as batch:
        batch.put(b"b", b"2")
        raise RuntimeError("boom")
    assert store.get(b"b") is None


def test_iterator_reads_a_snapshot_taken_when_it_was_created(store: KeyValueBytesStore) -> None:
    fill(store, [b"a", b"b", b"c"])
    with store.all() as it:
        assert next(it)[0] == b"a"
        store.delete(b"b")
        store.put(b"bb", b"new")
        store.put(b"c", b"changed")
        rest = list(it)
    assert rest == [(b"b", b"vb"), (b"c", b"vc")]
    assert keys_of(store.all()) == [b"a", b"bb", b"c"]


def test_closed_iterator_stops(store: KeyValueBytesStore) -> None:
    fill(store, ORDERED_KEYS)
    it = store.all()
    next(it)
    it.close()
    assert list(it) == []
    it.close()  # twice is harmless


def test_persistence_flags(store: KeyValueBytesStore, backend: str) -> None:
    assert store.is_open
    assert store.persistent is (backend == "leveldb")
    store.close()
    assert not store.is_open


def test_leveldb_keeps_its_files_in_state_dir_and_persists_across_reopen(
    context: RecordingStateStoreContext,
) -> None:
    store = open_bytes_store(LevelDBKeyValueBytesStore, context, "persisted")
    fill(store, ORDERED_KEYS)
    store.delete(b"\x7f")
    store.flush()
    store.close()
    assert (context.state_dir / "persisted" / "CURRENT").exists()
    reopened = open_bytes_store(LevelDBKeyValueBytesStore, context, "persisted")
    assert keys_of(reopened.all()) == [k for k in ORDERED_KEYS if k != b"\x7f"]
    assert reopened.get(b"\x80") == b"v\x80"
    reopened.close()


class _RecordingDB:
    """Wraps a plyvel DB to keep the raw cursors the store opens, so a test can check they were closed."""

    def __init__(self, db: plyvel.DB) -> None:
        self._db = db
        self.cursors: list[Any] = []

    def iterator(self, **kwargs: Any) -> Any:
        cursor = self._db.iterator(**kwargs)
        self.cursors.append(cursor)
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def _is_closed(cursor: Any) -> bool:
    try:
        next(cursor)
    except RuntimeError:  # plyvel: "Database or iterator is closed"
        return True
    except StopIteration:
        return False
    return False


@pytest.mark.parametrize("usage", ["with-block", "exhausted", "closed-unstarted", "garbage-collected"])
def test_leveldb_cursors_are_released(context: RecordingStateStoreContext, usage: str) -> None:
    store = open_bytes_store(LevelDBKeyValueBytesStore, context, "iters")
    fill(store, ORDERED_KEYS)
    recording = _RecordingDB(store._db)  # white-box: the raw cursor is what must be released
    store._db = recording
    if usage == "with-block":
        with store.range(b"\x01", None) as it:
            assert next(it)[0] == b"\x01"
    elif usage == "exhausted":
        assert len(list(store.all())) == len(ORDERED_KEYS)
    elif usage == "closed-unstarted":
        store.all().close()
    else:
        it = store.all()
        next(it)
        del it
        gc.collect()
    [cursor] = recording.cursors
    assert _is_closed(cursor)
    store._db = recording._db
    store.close()


def test_leveldb_store_closed_while_iterating_raises(context: RecordingStateStoreContext) -> None:
    store = open_bytes_store(LevelDBKeyValueBytesStore, context, "closing")
    fill(store, ORDERED_KEYS)
    it = store.all()
    next(it)
    store.close()
    with pytest.raises(InvalidStateStoreError):
        next(it)


def test_leveldb_second_open_of_same_directory_fails_clearly(context: RecordingStateStoreContext) -> None:
    first = open_bytes_store(LevelDBKeyValueBytesStore, context, "locked")
    with pytest.raises(Exception, match="cannot open the LevelDB store 'locked'"):
        open_bytes_store(LevelDBKeyValueBytesStore, context, "locked")
    first.close()


@pytest.mark.parametrize(("low", "high"), [(b"\x00", b"\x80"), (b"\x01", b"\x01"), (b"\x80", b"\x01"),
                                           (b"", b"\xff\xff"), (b"\x00\x01", b"\x7f\xff")])
def test_range_list_is_range_read_at_once(store: KeyValueBytesStore, low: bytes, high: bytes) -> None:
    fill(store, ORDERED_KEYS)
    store.delete(b"\x7f")
    with store.range(low, high) as it:
        expected = list(it)
    assert store.range_list(low, high) == expected
