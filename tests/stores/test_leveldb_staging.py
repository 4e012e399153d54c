"""A LevelDB store under exactly-once keeps the open transaction's writes staged (`StagedDatabase`).

Checked against a model: any sequence of puts, deletes, seals (a commit begins), commits (the
transaction committed: staged writes and the changelog offset written together), aborts and crashes
(the process dies: the store is reopened from disk) reads back as the model says — the staged writes
visible to the task, and after a reopen exactly the committed writes with their offset, never an
uncommitted one. The offset's reserved key is never seen by a read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlet.errors import StreamsError
from streamlet.stores.leveldb import LevelDBKeyValueBytesStore
from streamlet.stores.leveldb.staging import META_KEY, StagedDatabase
from streamlet.stores.leveldb.window import LevelDBWindowBytesStore
from tests.stores.context import RecordingStateStoreContext

# Keys around the reserved one (its prefixes, neighbours) as well as ordinary ones.
KEYS = [b"", b"\x00", b"\x00\x00\x00", b"\x00\x00\x00streamlet", META_KEY[:-1], META_KEY + b"\x00", b"a", b"ab",
        b"b", b"\xff", b"\xff\xff"]


class EosContext(RecordingStateStoreContext):
    """The recording context under exactly-once, keeping the stores' staged databases as the runtime does."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir, config={"processing.guarantee": "exactly_once_v2"})
        self.staged: dict[str, StagedDatabase] = {}

    def register_transactional(self, name: str, database: Any) -> None:
        self.staged[name] = database


def _open(context: EosContext) -> tuple[LevelDBKeyValueBytesStore, StagedDatabase]:
    store = LevelDBKeyValueBytesStore("s")
    store.open(context)
    staged = context.staged["s"]
    staged.staging = True
    return store, staged


ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(KEYS), st.binary(max_size=3)),
    st.tuples(st.just("delete"), st.sampled_from(KEYS)),
    st.tuples(st.just("batch"), st.lists(st.tuples(st.sampled_from(KEYS), st.none() | st.binary(max_size=3)),
                                         max_size=4)),
    st.tuples(st.just("seal")),
    st.tuples(st.just("commit"), st.booleans()),  # True: every sealed generation, else the oldest
    st.tuples(st.just("abort")),
    st.tuples(st.just("crash")),
    st.tuples(st.just("range"), st.sampled_from(KEYS), st.sampled_from(KEYS)),
), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_staged_writes_match_a_model(tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]]) -> None:
    context = EosContext(tmp_path_factory.mktemp("staging"))
    store, staged = _open(context)
    committed: dict[bytes, bytes] = {}
    committed_offset: int | None = None
    sealed: list[tuple[int, dict[bytes, bytes | None]]] = []
    current: dict[bytes, bytes | None] = {}
    generation = 0
    offset = 0

    def view() -> dict[bytes, bytes]:
        merged: dict[bytes, bytes | None] = dict(committed)
        for _, writes in sealed:
            merged.update(writes)
        merged.update(current)
        return {k: v for k, v in merged.items() if v is not None}

    try:
        for i, step in enumerate(steps):
            kind = step[0]
            unique = i.to_bytes(2, "big")  # every write's value differs from every other's
            if kind == "put":
                store.put(step[1], step[2] + unique)
                current[step[1]] = step[2] + unique
            elif kind == "delete":
                store.delete(step[1])
                current[step[1]] = None
            elif kind == "batch":
                with store.batch() as batch:
                    for key, value in step[1]:
                        value = None if value is None else value + unique
                        batch.put(key, value)
                        current[key] = value
            elif kind == "seal":
                generation += 1
                staged.seal(generation)
                if current:
                    sealed.append((generation, current))
                    current = {}
            elif kind == "commit":
                offset += 10
                upto = None if step[1] or not sealed else sealed[0][0]
                staged.commit(upto, offset)
                while sealed and (upto is None or sealed[0][0] <= upto):
                    for key, value in sealed.pop(0)[1].items():
                        if value is None:
                            committed.pop(key, None)
                        else:
                            committed[key] = value
                committed_offset = offset
            elif kind in ("abort", "crash"):
                # A dirty close discards what is staged; a crash loses it with the process. Either way
                # the reopened store holds what was committed, with its offset.
                if kind == "abort":
                    store.close()
                else:
                    staged.raw.close()  # no discard, no commit: as a killed process leaves the files
                    store._db = None
                context.staged.clear()
                store, staged = _open(context)
                sealed, current = [], {}
                assert staged.committed_offset() == committed_offset
            elif kind == "range":
                low, high = sorted((step[1], step[2]))
                expected = sorted((k, v) for k, v in view().items() if low <= k <= high)
                assert store.range_list(low, high) == expected
                with store.range(low, high) as it:
                    assert list(it) == expected
            model = view()
            for key in KEYS:
                assert store.get(key) == model.get(key)
            assert store.get(META_KEY) is None
            with store.all() as it:
                assert list(it) == sorted(model.items())
            assert store.approximate_num_entries() == len(model)
    finally:
        store.close()


def test_a_crash_leaves_only_committed_writes_and_their_offset(tmp_path: Path) -> None:
    context = EosContext(tmp_path)
    store, staged = _open(context)
    for i in range(100):
        store.put(b"k%03d" % i, b"first")
    staged.seal(1)
    for i in range(50):
        store.put(b"k%03d" % i, b"second")  # the next transaction, in flight
    staged.commit(1, 500)
    staged.seal(2)
    store.put(b"extra", b"x")
    staged.raw.close()  # killed before transaction 2 committed
    store._db = None
    context.staged.clear()
    reopened, staged = _open(context)
    try:
        assert staged.committed_offset() == 500
        assert reopened.range_list(b"", b"\xff") == [(b"k%03d" % i, b"first") for i in range(100)]
    finally:
        reopened.close()


def test_the_reserved_key_cannot_be_written_while_staging(tmp_path: Path) -> None:
    store, _ = _open(EosContext(tmp_path))
    try:
        with pytest.raises(StreamsError, match="reserves"):
            store.put(META_KEY, b"x")
    finally:
        store.close()


def test_staged_bytes_past_the_limit_ask_for_a_commit_once(tmp_path: Path) -> None:
    store, staged = _open(EosContext(tmp_path))
    asked: list[int] = []
    staged.limit_bytes = 1000
    staged.on_full = lambda: asked.append(staged.uncommitted_bytes)
    try:
        for i in range(100):
            store.put(b"k%03d" % i, b"v" * 16)  # 20 bytes each
        assert len(asked) == 1 and asked[0] > 1000
        staged.seal(1)
        staged.commit(1, 10)
        assert staged.uncommitted_bytes == 0
        for i in range(100):
            store.put(b"k%03d" % i, b"w" * 16)
        assert len(asked) == 2  # asked again once the first commit brought it under the limit
    finally:
        store.close()


def test_an_at_least_once_store_drops_an_exactly_once_offset(tmp_path: Path) -> None:
    context = EosContext(tmp_path)
    store, staged = _open(context)
    store.put(b"a", b"1")
    staged.seal(1)
    staged.commit(1, 7)
    store.close()
    alos = LevelDBKeyValueBytesStore("s")
    alos.open(RecordingStateStoreContext(tmp_path))
    try:
        assert alos.range_list(b"", b"\xff\xff") == [(b"a", b"1")]
        assert alos.approximate_num_entries() == 1
    finally:
        alos.close()


def test_window_store_expiry_waits_for_the_commit(tmp_path: Path) -> None:
    """An expired segment is dropped with the commit of the writes that expired it: a crash before that
    commit leaves it on disk, as the committed changelog still has it."""
    context = EosContext(tmp_path)
    retention = 60_000
    store = LevelDBWindowBytesStore("w", retention)
    store.open(context)
    staged = context.staged["w"]
    staged.staging = True
    store.put(b"k", 0, 0, b"old")
    staged.seal(1)
    staged.commit(1, 1)
    store.put(b"k", 10 * retention, 0, b"new")  # expires the first segment
    assert store.get(b"k", 0, 0) is None
    assert list(store.fetch(b"k", 10 * retention, 10 * retention)) == [(b"k", 10 * retention, 0, b"new")]
    staged.raw.close()  # killed before that commit
    store._db = None
    context.staged.clear()
    reopened = LevelDBWindowBytesStore("w", retention)
    reopened.open(context)
    try:
        assert context.staged["w"].committed_offset() == 1
        assert list(reopened.fetch(b"k", 0, 20 * retention)) == [(b"k", 0, 0, b"old")]
        staged = context.staged["w"]
        staged.staging = True
        reopened.put(b"k", 10 * retention, 0, b"new")
        staged.seal(2)
        staged.commit(2, 2)
        assert list(reopened.fetch_all(0, 20 * retention)) == [(b"k", 10 * retention, 0, b"new")]
        on_disk = [k for k in staged.raw.iterator(include_value=False) if k != META_KEY]
        assert len(on_disk) == 1  # the expired segment is gone from disk with the commit
    finally:
        reopened.close()
