"""Versioned key-value stores: Kafka Streams' rules, a model of versions against both backends, and
restoration from the changelog.

The model is what Kafka Streams' `VersionedKeyValueStore` promises, written as plainly as possible:
per key every version ever accepted (a tombstone is a version whose value is None), stream time as the
largest accepted timestamp, a write refused when older than stream time minus the history retention,
and a read as of a time past the retention answered only by a latest version that applied then. The
store (segments, degenerate rows, segment expiry) must answer every put, delete and read as the
model does, and so must a fresh store restored from its changelog, in batches of one record and in drawn
batch sizes, except where Kafka Streams' batch restore itself answers otherwise
(`_batches_cut_the_retention_early`).

One rule of the model is a quirk of Kafka Streams' store, kept for fidelity: a deletion at the very
timestamp of the key's latest value replaces that value by nothing rather than by a tombstone when
the version before it is a tombstone or there is none (its latest value store is simply cleared), so
a later out-of-order version can become the latest again.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlet.errors import ConfigError, InvalidStateStoreError, StreamsError, TopologyError
from streamlet.serdes import Serdes
from streamlet.stores import Stores
from streamlet.stores.versioned import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    TypedVersionedKeyValueStore,
    VersionedRecord,
)
from streamlet.stores.versioned.segment_row import SegmentRow
from tests.stores.context import RecordingStateStoreContext

FACTORIES = {
    "leveldb": Stores.persistent_versioned_key_value_store,
    "memory": Stores.in_memory_versioned_key_value_store,
}


def build(backend: str, context: RecordingStateStoreContext, history: int = 100, segment: int | None = 10,
          name: str = "vstore", logging: bool = True) -> TypedVersionedKeyValueStore:
    factory = FACTORIES[backend]
    supplier = factory(name, history) if segment is None else factory(name, history, segment)
    builder = Stores.versioned_key_value_store_builder(supplier, Serdes.String(), Serdes.String())
    builder = builder.with_logging_enabled() if logging else builder.with_logging_disabled()
    store = builder.build()
    store.init(context)
    return store


@pytest.fixture(params=sorted(FACTORIES))
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


# -- the model -------------------------------------------------------------------------------------

class Model:
    """Kafka Streams' versioned store semantics, version by version."""

    def __init__(self, history: int) -> None:
        self.history = history
        self.stream_time = -1
        self.versions: dict[str, dict[int, str | None]] = {}

    def _refused(self, timestamp: int) -> bool:
        return timestamp < self.stream_time - self.history

    def _valid_at(self, key: str, timestamp: int) -> tuple[int, str | None, int | None] | None:
        """(valid from, value, valid to or None for the latest) of the version valid at `timestamp`."""
        versions = self.versions.get(key, {})
        older = [t for t in versions if t <= timestamp]
        if not older:
            return None
        start = max(older)
        newer = [t for t in versions if t > start]
        return start, versions[start], min(newer) if newer else None

    def put(self, key: str, value: str | None, timestamp: int) -> int:
        if self._refused(timestamp):
            return PUT_RETURN_CODE_NOT_PUT
        self.stream_time = max(self.stream_time, timestamp)
        versions = self.versions.setdefault(key, {})
        if value is None and versions and max(versions) == timestamp and versions[timestamp] is not None:
            before = [t for t in versions if t < timestamp]
            if not before or versions[max(before)] is None:  # Kafka Streams' quirk (see the module docstring)
                del versions[timestamp]
                return PUT_RETURN_CODE_VALID_TO_UNDEFINED
        versions[timestamp] = value
        newer = [t for t in versions if t > timestamp]
        return min(newer) if newer else PUT_RETURN_CODE_VALID_TO_UNDEFINED

    def delete(self, key: str, timestamp: int) -> VersionedRecord | None:
        if self._refused(timestamp):
            return None
        existing = self.get(key, timestamp)
        self.put(key, None, timestamp)
        return existing

    def get(self, key: str, as_of: int | None = None, with_valid_to: bool = False) -> VersionedRecord | None:
        versions = self.versions.get(key, {})
        if not versions:
            return None
        latest = max(versions)
        if as_of is None or latest <= as_of:
            value = versions[latest]
            return None if value is None else VersionedRecord(value, latest)
        if as_of < self.stream_time - self.history:
            return None
        found = self._valid_at(key, as_of)
        if found is None or found[1] is None:
            return None
        return VersionedRecord(found[1], found[0], found[2] if with_valid_to else None)


# -- the properties --------------------------------------------------------------------------------

KEYS = ["a", "b", "c"]
timestamps = st.integers(0, 120)
operations = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(KEYS), st.text("xyz", max_size=2), timestamps),
    st.tuples(st.just("put"), st.sampled_from(KEYS), st.none(), timestamps),
    st.tuples(st.just("delete"), st.sampled_from(KEYS), st.none(), timestamps),
    st.tuples(st.just("get"), st.sampled_from(KEYS), st.none(), st.none() | timestamps),
), max_size=40)


def _check_reads(store: TypedVersionedKeyValueStore, model: Model) -> None:
    for key in KEYS:
        assert store.get(key) == model.get(key), key
        for as_of in range(-1, 125, 3):
            assert store.get(key, as_of) == model.get(key, as_of), (key, as_of)
            assert store.get_with_valid_to(key, as_of) == model.get(key, as_of, with_valid_to=True), (key, as_of)


EXAMPLES = int(os.environ.get("VERSIONED_EXAMPLES", "150"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, history=st.sampled_from([0, 5, 30, 100]), segment=st.sampled_from([1, 7, 25, 1000]),
       batch=st.integers(1, 8))
def test_store_answers_as_the_model_and_so_does_its_restored_copy(backend: str, tmp_path: Path,
                                                                    ops: list[tuple[Any, ...]], history: int,
                                                                    segment: int, batch: int) -> None:
    run = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    context = RecordingStateStoreContext(run / "live")
    store = build(backend, context, history, segment)
    model = Model(history)
    for op, key, value, timestamp in ops:
        if op == "put":
            assert store.put(key, value, timestamp) == model.put(key, value, timestamp), (op, key, value, timestamp)
        elif op == "delete":
            assert store.delete(key, timestamp) == model.delete(key, timestamp), (op, key, timestamp)
        else:
            assert store.get(key, timestamp) == model.get(key, timestamp), (op, key, timestamp)
    _check_reads(store, model)
    store.close()

    entries = context.changelog_entries("vstore")
    # Kafka Streams' own restored copy differs from its live store where batches cut the retention early
    batch_sizes = [1] if _batches_cut_the_retention_early(entries, batch, history, segment) else [1, batch]
    for n, size in enumerate(batch_sizes):
        restored_context = RecordingStateStoreContext(run / f"restored-{n}")
        restored = build(backend, restored_context, history, segment)
        restored_context.restore("vstore", entries, batch_size=size)
        _check_reads(restored, model)
        # and it goes on as the original would
        after = Model(history)
        after.versions = {key: dict(versions) for key, versions in model.versions.items()}
        after.stream_time = model.stream_time
        for key in KEYS:
            assert restored.put(key, "after", after.stream_time) == after.put(key, "after", after.stream_time)
        _check_reads(restored, after)
        restored.close()


def _segment_id(timestamp: int, segment: int) -> int:
    return -(-timestamp // segment) if timestamp < 0 else timestamp // segment


def _batches_cut_the_retention_early(entries: list[Any], batch: int, history: int, segment: int) -> bool:
    """Whether restoring in batches of `batch` writes some version with a later stream time than the live
    store had when it wrote it, far enough to fall in another segment's retention.

    Kafka Streams' `RocksDBVersionedStore.restoreBatch` writes every record of a batch at the stream time of
    the batch's end (so as not to write segments that will have expired by then). A version the live store
    kept, such as a tombstone whose segment expires within the batch, is then never written, and an older
    out-of-order version restored after it becomes the latest again: Kafka Streams' restored copy answers
    differently from its live store. streamlet restores as Kafka Streams does, so only batchings without
    that effect are held to the live store's answers; batches of 1 always are."""
    observed = -1
    for start in range(0, len(entries), batch):
        chunk = entries[start:start + batch]
        end = max([observed, *(timestamp for _key, _value, timestamp in chunk)])
        for _key, _value, timestamp in chunk:
            if timestamp < observed - history:
                continue
            observed = max(observed, timestamp)
            if _segment_id(observed - history, segment) != _segment_id(end - history, segment):
                return True
    return False


def test_the_changelog_carries_plain_values_at_the_version_timestamps(backend: str, tmp_path: Path) -> None:
    """Kafka Streams' `ChangeLoggingVersionedKeyValueBytesStore`: key, raw value (None for a delete),
    the version's timestamp (not the record context's); refused writes are logged too."""
    context = RecordingStateStoreContext(tmp_path)
    store = build(backend, context, history=10)
    context.at(999)
    store.put("a", "1", 50)
    store.put("a", "2", 45)
    assert store.put("a", "3", 20) == PUT_RETURN_CODE_NOT_PUT
    assert store.delete("a", 30) is None  # refused: older than the grace period
    assert store.delete("a", 48) == VersionedRecord("2", 45)
    store.put("b", None, 60)
    assert [(c.key, c.value, c.timestamp) for c in context.changelog] == [
        (b"a", b"1", 50), (b"a", b"2", 45), (b"a", b"3", 20), (b"a", None, 30), (b"a", None, 48), (b"b", None, 60)]


def test_put_return_codes_and_reads(backend: str, tmp_path: Path) -> None:
    store = build(backend, RecordingStateStoreContext(tmp_path), history=100, segment=10)
    assert store.put("k", "v10", 10) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.put("k", "v30", 30) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.put("k", "v20", 20) == 30  # out of order: valid until the next version
    assert store.put("k", None, 25) == 30  # a tombstone between them
    assert store.put("k", "v20b", 20) == 25  # the same timestamp replaces
    assert [store.get("k", t) for t in (9, 10, 19, 20, 24, 25, 29, 30, 1000)] == [
        None, VersionedRecord("v10", 10), VersionedRecord("v10", 10), VersionedRecord("v20b", 20),
        VersionedRecord("v20b", 20), None, None, VersionedRecord("v30", 30), VersionedRecord("v30", 30)]
    assert store.get("k") == VersionedRecord("v30", 30)
    assert store.get_with_valid_to("k", 21) == VersionedRecord("v20b", 20, 25)
    assert store.get_with_valid_to("k", 31) == VersionedRecord("v30", 30)  # the latest: valid_to is open


def test_history_retention_is_the_grace_period_and_the_latest_never_expires(backend: str, tmp_path: Path) -> None:
    store = build(backend, RecordingStateStoreContext(tmp_path), history=50, segment=10)
    store.put("old", "o", 0)
    store.put("k", "1", 10)
    store.put("k", "2", 100)  # stream time 100: the history reaches back to 50
    assert store.get("k", 60) == VersionedRecord("1", 10)
    assert store.get("k", 49) is None  # past the history retention
    assert store.get("old", 5) == VersionedRecord("o", 0)  # the latest version still answers
    assert store.put("k", "late", 49) == PUT_RETURN_CODE_NOT_PUT
    assert store.put("k", "ok", 50) == 100
    assert store.get("k", 55) == VersionedRecord("ok", 50)


def test_a_reopened_persistent_store_keeps_its_history(tmp_path: Path) -> None:
    """Segments are found again on disk (Kafka Streams' store forgets them until written again)."""
    context = RecordingStateStoreContext(tmp_path)
    store = build("leveldb", context, history=1000, segment=10)
    for t in range(0, 100, 7):
        store.put("k", f"v{t}", t)
    store.close()
    again = build("leveldb", context, history=1000, segment=10)
    assert again.get("k", 50) == VersionedRecord("v49", 49)
    assert again.get("k", 3) == VersionedRecord("v0", 0)
    assert again.get("k") == VersionedRecord("v98", 98)
    again.close()


def test_factory_and_builder_checks() -> None:
    with pytest.raises(TopologyError, match="cannot be negative"):
        Stores.persistent_versioned_key_value_store("v", -1)
    with pytest.raises(TopologyError, match="must be positive"):
        Stores.in_memory_versioned_key_value_store("v", 10, 0)
    with pytest.raises(TopologyError, match="invalid state store name"):
        Stores.persistent_versioned_key_value_store("a b", 10)
    supplier = Stores.persistent_versioned_key_value_store("v", 3_600_000)
    assert supplier.segment_interval_ms == 300_000  # Kafka Streams' default for an hour of history
    builder = Stores.versioned_key_value_store_builder(supplier)
    with pytest.raises(TopologyError, match="do not support caching"):
        builder.with_caching_enabled()
    assert builder.logging_config == {"cleanup.policy": "compact", "min.compaction.lag.ms": str(3_600_000 + 86_400_000)}
    builder.with_logging_enabled({"min.compaction.lag.ms": "5"})
    assert builder.logging_config["min.compaction.lag.ms"] == "5"
    with pytest.raises(TypeError, match="versioned store supplier"):
        Stores.versioned_key_value_store_builder(Stores.persistent_key_value_store("v"))  # type: ignore[arg-type]


def test_bad_use_gets_clear_errors(backend: str, tmp_path: Path) -> None:
    supplier = FACTORIES[backend]("v", 10)
    unopened = Stores.versioned_key_value_store_builder(supplier, Serdes.String(), Serdes.String()).build()
    with pytest.raises(InvalidStateStoreError, match="not initialized"):
        unopened.get("a")
    store = build(backend, RecordingStateStoreContext(tmp_path))
    with pytest.raises(StreamsError, match="must not be None"):
        store.put(None, "x", 1)
    with pytest.raises(TypeError, match="int milliseconds"):
        store.put("a", "x", "5")  # type: ignore[arg-type]
    store.close()
    with pytest.raises(InvalidStateStoreError, match="closed"):
        store.get("a")
    no_serdes = Stores.versioned_key_value_store_builder(FACTORIES[backend]("w", 10)).build()
    with pytest.raises(ConfigError, match="default.key.serde"):
        no_serdes.init(RecordingStateStoreContext(tmp_path / "w"))
    with pytest.raises(ValueError, match="cannot be None"):
        VersionedRecord(None, 1)


def test_segment_rows_round_trip_and_keep_tombstones() -> None:
    row = SegmentRow.with_version(None, 10, 10)  # a degenerate row: a lone deletion
    assert row.degenerate
    row.insert_as_earliest(5, b"x")
    assert (row.next_timestamp, row.versions) == (10, [(5, b"x")])
    row.insert_as_latest(12, 20, b"")  # the gap 10..12 becomes a tombstone
    assert (row.next_timestamp, row.versions) == (20, [(12, b""), (10, None), (5, b"x")])
    again = SegmentRow.decode(row.encode())
    assert (again.next_timestamp, again.versions) == (20, [(12, b""), (10, None), (5, b"x")])
    assert again.find(11).value is None and again.find(19).value == b"" and again.find(7).valid_to == 10
    with pytest.raises(ValueError):
        again.find(20)


def test_long_values_and_keys_of_any_bytes(backend: str, tmp_path: Path) -> None:
    context = RecordingStateStoreContext(tmp_path)
    builder = Stores.versioned_key_value_store_builder(FACTORIES[backend]("b", 1000, 3), Serdes.Bytes(),
                                                       Serdes.Bytes())
    store = builder.build()
    store.init(context)
    keys = [b"", b"\x00", b"\x01" + struct.pack(">q", 5), b"\xff" * 20]
    for i, key in enumerate(keys):
        store.put(key, bytes([i]) * 300, 10 + i)
        store.put(key, b"", 5)
    for i, key in enumerate(keys):
        assert store.get(key) == VersionedRecord(bytes([i]) * 300, 10 + i)
        assert store.get(key, 9) == VersionedRecord(b"", 5)
