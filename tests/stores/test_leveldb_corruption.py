"""A LevelDB store damaged on disk: found at open (or by a read), and rebuilt rather than trusted.

Store level: each kind of damage raises `StateStoreCorruptedError` naming the store and its path,
while a database locked by someone else is not called corrupted (wiping it would destroy a live
instance's state). Task level: `StreamTask.initialize_stores` wipes the task's state and checkpoint
and opens the stores empty, so that the changelog reader restores them from the beginning.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import plyvel
import pytest

from streamlet.actors.stream_task import StreamTask
from streamlet.errors import StateStoreCorruptedError, StreamsError
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from streamlet.stores.leveldb.keyvalue import CORRUPTED_MARKER, _check_tables
from streamlet.stores.leveldb.window import LevelDBWindowBytesStore
from tests.integration.state_faults import CORRUPTIONS, corrupt_leveldb
from tests.stores.context import RecordingStateStoreContext, wordcount_task

KEYS = 3000


def _filled_store(context: RecordingStateStoreContext, *, reopen: bool) -> Path:
    """A closed store holding KEYS keys. Reopened once (`reopen`), LevelDB turns its log into a table
    and the fresh log is empty; otherwise everything is still in the log."""
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)
    for i in range(KEYS):
        store.put(b"k%05d" % i, b"v" * 40)
    store.close()
    if reopen:
        store.open(context)
        store.close()
    return context.state_dir / "s"


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_damage_is_reported_at_open_naming_the_store_and_path(context: RecordingStateStoreContext, how: str) -> None:
    path = _filled_store(context, reopen=how != "log")
    corrupt_leveldb(path, how)
    with pytest.raises(StateStoreCorruptedError) as caught:
        LevelDBKeyValueBytesStore("s").open(context)
    assert caught.value.store_name == "s"
    assert str(path) in str(caught.value)


def test_undamaged_store_reopens_with_its_data(context: RecordingStateStoreContext) -> None:
    _filled_store(context, reopen=True)
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)
    try:
        assert store.approximate_num_entries() == KEYS
        assert store.get(b"k00042") == b"v" * 40
    finally:
        store.close()


def test_a_new_store_in_an_empty_directory_is_not_corruption(context: RecordingStateStoreContext) -> None:
    (context.state_dir / "s").mkdir(parents=True)
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)
    store.close()


class _CompactsAfterListing:
    """A real database that compacts right after its table listing is read, as LevelDB's background
    compaction may do just after an open: the tables the listing named are gone from disk."""

    def __init__(self, db: plyvel.DB) -> None:
        self.db = db
        self.listings = 0

    def get_property(self, name: bytes) -> bytes | None:
        listing: bytes | None = self.db.get_property(name)
        self.listings += 1
        if self.listings == 1:
            self.db.compact_range(start=b"", stop=b"\xff" * 8)  # (no bounds compacts nothing in plyvel)
        return listing


def test_tables_compacted_away_while_being_checked_are_not_corruption(context: RecordingStateStoreContext) -> None:
    for _ in range(3):  # three overlapping tables (each reopen turns the log into one), which compaction merges
        path = _filled_store(context, reopen=True)
    db = plyvel.DB(str(path))
    try:
        before = db.get_property(b"leveldb.sstables")
        assert before is not None and before.count(b".. ") >= 3
        compacting = _CompactsAfterListing(db)
        _check_tables(compacting, path, "s")  # the first listing's tables are gone when looked for
        assert compacting.listings == 2
        assert db.get_property(b"leveldb.sstables") != before
    finally:
        db.close()


def test_a_table_still_listed_but_gone_is_corruption(context: RecordingStateStoreContext) -> None:
    path = _filled_store(context, reopen=True)
    db = plyvel.DB(str(path))
    try:
        table = next(path.glob("*.ldb"))
        table.unlink()
        with pytest.raises(StateStoreCorruptedError, match=f"table {table.name} is missing"):
            _check_tables(db, path, "s")
    finally:
        db.close()


def test_damage_found_by_a_read_marks_the_store_for_a_rebuild(context: RecordingStateStoreContext) -> None:
    path = _filled_store(context, reopen=True)
    corrupt_leveldb(path, "flipped-table")
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)  # same size, so nothing to see at open: the blocks' checksums tell on read
    try:
        with pytest.raises(StateStoreCorruptedError, match="checksum|Corruption"):
            store.get(b"k00042")
    finally:
        store.close()
    assert (path / CORRUPTED_MARKER).exists()
    with pytest.raises(StateStoreCorruptedError, match="marked corrupted"):
        LevelDBKeyValueBytesStore("s").open(context)


def test_window_store_reports_damage_at_open(context: RecordingStateStoreContext) -> None:
    store = LevelDBWindowBytesStore("w", retention_ms=3_600_000)
    store.open(context)
    store.put(b"k", 1000, 0, b"v")
    store.close()
    corrupt_leveldb(context.state_dir / "w", "manifest")
    with pytest.raises(StateStoreCorruptedError, match="'w'"):
        LevelDBWindowBytesStore("w", retention_ms=3_600_000).open(context)


def test_a_lock_held_elsewhere_is_an_error_but_not_corruption(context: RecordingStateStoreContext) -> None:
    path = _filled_store(context, reopen=False)
    holder = plyvel.DB(str(path))
    try:
        with pytest.raises(StreamsError) as caught:
            LevelDBKeyValueBytesStore("s").open(context)
        assert not isinstance(caught.value, StateStoreCorruptedError)
    finally:
        holder.close()


# -- the task: wipe and rebuild ------------------------------------------------------------------------

def _wordcount_task(state_root: Path) -> StreamTask:
    return wordcount_task(state_root, "corrupt-test")


def _changelog_key(task: StreamTask) -> str:
    topic, partition = task.state.changelog_partitions()["counts-store"]
    return f"{topic}:{partition}"


def _task_with_checkpointed_state(state_root: Path) -> tuple[StreamTask, Path]:
    task = _wordcount_task(state_root)
    task.initialize_stores()
    inner = task.stores["counts-store"]
    for i in range(KEYS):
        inner.put(f"w{i}", ValueAndTimestamp(i, 0))  # type: ignore[attr-defined]
    task.state.flush()
    task.state.write_checkpoint({_changelog_key(task): 1234})
    task.close(clean=True)
    return task, task.state.task_dir


@pytest.mark.parametrize("how", ["manifest", "log", "missing-current"])
def test_task_wipes_a_corrupted_store_and_its_checkpoint(tmp_path: Path, how: str,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    _, task_dir = _task_with_checkpointed_state(tmp_path)
    corrupt_leveldb(task_dir / "counts-store", how)
    reopened = _wordcount_task(tmp_path)
    with caplog.at_level(logging.WARNING, logger="streamlet.actors.stream_task"):
        reopened.initialize_stores()
    try:
        assert reopened.state.read_checkpoint() == {}, "a wiped store must be restored from the start"
        assert reopened.stores["counts-store"].get("w1") is None  # type: ignore[attr-defined]
        message = caplog.text
        assert "task 1_0" in message and "'counts-store'" in message and str(task_dir) in message
        assert "rebuilding its stores from their changelogs" in message
    finally:
        reopened.close(clean=False)


def test_task_treats_a_vanished_store_directory_under_a_checkpoint_as_corrupted(tmp_path: Path) -> None:
    _, task_dir = _task_with_checkpointed_state(tmp_path)
    shutil.rmtree(task_dir / "counts-store")
    reopened = _wordcount_task(tmp_path)
    reopened.initialize_stores()
    try:
        assert reopened.state.read_checkpoint() == {}
    finally:
        reopened.close(clean=False)


def test_task_keeps_intact_state_and_its_checkpoint(tmp_path: Path) -> None:
    task, _ = _task_with_checkpointed_state(tmp_path)
    reopened = _wordcount_task(tmp_path)
    reopened.initialize_stores()
    try:
        assert reopened.state.read_checkpoint() == {_changelog_key(task): 1234}
        assert reopened.stores["counts-store"].get("w7") == ValueAndTimestamp(7, 0)  # type: ignore[attr-defined]
    finally:
        reopened.close(clean=False)
