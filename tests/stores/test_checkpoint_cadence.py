"""When a task syncs its stores and writes its checkpoint: as Kafka Streams does, not at every commit.

A commit only pushes caches down (`flush`); the disk syncs come with a checkpoint, which a running
task writes once its changelogs moved more than `OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT` offsets since
the last one, and a clean close always writes. The store's sync always runs before the checkpoint
file is replaced, so a checkpoint never vouches for writes an OS crash could take back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import streamlet.stores.leveldb.keyvalue as leveldb_store
import streamlet.stores.leveldb.window as window_leveldb
from streamlet.actors.state_manager import OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT
from streamlet.actors.stream_task import StreamTask
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from streamlet.stores.leveldb.window import LevelDBWindowBytesStore
from tests.stores.context import RecordingStateStoreContext, wordcount_task


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every LevelDB sync (fdatasync of the log) the stores make, by database."""
    made: list[object] = []

    def recording_sync(db: object) -> None:
        made.append(db)

    monkeypatch.setattr(leveldb_store, "sync", recording_sync)
    monkeypatch.setattr(window_leveldb, "sync", recording_sync)
    return made


def test_a_leveldb_store_syncs_only_when_its_registered_sync_is_called(
        context: RecordingStateStoreContext, syncs: list[object]) -> None:
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)
    try:
        assert len(context.syncs) == 1
        store.put(b"k", b"v")
        store.flush()
        assert syncs == [], "a commit's flush must not sync the disk"
        context.syncs[0]()
        assert len(syncs) == 1
        context.syncs[0]()
        assert len(syncs) == 1, "nothing written since the last sync: nothing to sync"
        with store.batch() as batch:
            batch.put_all([(b"a", b"1")])
        context.syncs[0]()
        assert len(syncs) == 2
    finally:
        store.close()
    context.syncs[0]()  # a closed store has nothing to sync, and must not fail
    assert len(syncs) == 2


def test_a_leveldb_window_store_syncs_only_when_its_registered_sync_is_called(
        context: RecordingStateStoreContext, syncs: list[object]) -> None:
    store = LevelDBWindowBytesStore("w", retention_ms=60_000)
    store.open(context)
    try:
        store.put(b"k", 1_000, 0, b"v")
        store.flush()
        assert syncs == []
        context.syncs[0]()
        assert len(syncs) == 1
    finally:
        store.close()


def _task(state_root: Path) -> StreamTask:
    task = wordcount_task(state_root, "cadence-test")
    task.initialize_stores()
    return task


def _write(task: StreamTask, word: str, count: int) -> None:
    task.stores["counts-store"].put(word, ValueAndTimestamp(count, 0))  # type: ignore[attr-defined]


def test_a_running_task_checkpoints_only_once_its_changelog_moved_past_the_threshold(
        tmp_path: Path, syncs: list[object]) -> None:
    task = _task(tmp_path)
    try:
        (changelog,) = task.state.changelog_partitions().values()
        key = f"{changelog[0]}:{changelog[1]}"
        _write(task, "a", 1)
        task.prepare_commit()
        task.post_commit({changelog: 5_000})
        assert not task.state.checkpoint_path.exists() and syncs == []

        task.post_commit({changelog: OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT})
        assert not task.state.checkpoint_path.exists(), "a delta of exactly the threshold is not enough"

        _write(task, "b", 2)
        task.post_commit({changelog: OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT + 1})
        assert task.state.read_checkpoint() == {key: OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT + 1}
        assert len(syncs) == 1, "the store's log is synced before the checkpoint vouches for it"

        # The threshold counts from the last checkpoint, not from zero.
        task.post_commit({changelog: 2 * OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT})
        assert task.state.read_checkpoint() == {key: OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT + 1}
        task.post_commit({changelog: 2 * OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT + 2})
        assert task.state.read_checkpoint() == {key: 2 * OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT + 2}
    finally:
        task.close(clean=False)


def test_a_clean_close_always_syncs_and_checkpoints(tmp_path: Path, syncs: list[object]) -> None:
    task = _task(tmp_path)
    (changelog,) = task.state.changelog_partitions().values()
    _write(task, "a", 1)
    task.prepare_commit()
    task.post_commit({changelog: 3})
    assert not task.state.checkpoint_path.exists() and syncs == []
    task.close(clean=True)
    assert len(syncs) == 1, "a clean close syncs the stores before they close"
    task.post_commit({changelog: 4}, enforce=True)  # what the task manager does after the close's commit
    assert task.state.read_checkpoint() == {f"{changelog[0]}:{changelog[1]}": 4}

    reopened = _task(tmp_path)
    try:
        assert reopened.stores["counts-store"].get("a") == ValueAndTimestamp(1, 0)  # type: ignore[attr-defined]
    finally:
        reopened.close(clean=False)


def test_the_sync_runs_before_the_checkpoint_file_is_replaced(tmp_path: Path) -> None:
    task = _task(tmp_path)
    seen: list[bool] = []
    task.state.register_sync(lambda: seen.append(task.state.checkpoint_path.exists()))
    try:
        task.state.write_checkpoint({"t:0": 1})
        assert seen == [False] and task.state.checkpoint_path.exists()
    finally:
        task.close(clean=False)
