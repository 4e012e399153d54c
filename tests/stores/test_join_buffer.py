"""The grace-period join's buffer (stores/timeordered): order, eviction, changelog and restore, on both backends.

The differential test (tests/dsl/test_join_grace_period.py) checks the changelog bytes against Kafka
Streams 4.4.0; these tests pin down what a restart relies on: a buffer restored from its changelog, or
a reopened LevelDB buffer, holds the same records with their record contexts and lets every one of
them out once stream time passes it by the grace period.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.errors import StreamsError
from streamlet.stores.factory import Stores
from streamlet.stores.timeordered.buffer import TimeOrderedKeyValueBuffer, TimeOrderedKeyValueBufferBuilder
from streamlet.stores.timeordered.buffer_value import BufferedRecord, buffer_key, decode, encode_changelog_value
from tests.stores.context import RecordingStateStoreContext

SUPPLIERS = {"leveldb": Stores.persistent_key_value_store, "memory": Stores.in_memory_key_value_store}


@pytest.fixture(params=sorted(SUPPLIERS))
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def open_buffer(backend: str, context: RecordingStateStoreContext, grace: int = 10) -> TimeOrderedKeyValueBuffer:
    store = TimeOrderedKeyValueBufferBuilder(SUPPLIERS[backend]("j-Buffer"), grace).build()
    store.init(context)
    return store


def put(buffer: TimeOrderedKeyValueBuffer, key: str, ts: int, offset: int = 0) -> bool:
    return buffer.put(key.encode(), f"v{ts}{key}".encode(), ts, offset, "in", 1, (("h", b"x"),))


def evicted(buffer: TimeOrderedKeyValueBuffer) -> list[tuple[str, int]]:
    out: list[BufferedRecord] = []
    buffer.evict(out.append)
    return [(r.key.decode(), r.timestamp) for r in out]


def test_records_leave_in_time_then_key_bytes_then_arrival_order(backend: str, tmp_path: Path) -> None:
    buffer = open_buffer(backend, RecordingStateStoreContext(tmp_path))
    for key, ts in [("b", 5), ("a", 5), ("ab", 5), ("b", 5), ("a", 3), ("z", 14)]:
        assert put(buffer, key, ts)
    assert buffer.stream_time == 14
    assert evicted(buffer) == [("a", 3)]  # 14 - 10: only what is at or before 4
    assert put(buffer, "c", 15)
    assert evicted(buffer) == [("a", 5), ("ab", 5), ("b", 5), ("b", 5)]
    assert not put(buffer, "late", 4)  # older than stream time minus the grace: refused, the join joins it
    assert put(buffer, "edge", 5)  # exactly at the limit: kept, and let out by the next eviction
    assert evicted(buffer) == [("edge", 5)]
    assert buffer.num_records() == 2
    buffer.close()


def test_a_restored_buffer_holds_the_same_records_and_stream_time(backend: str, tmp_path: Path) -> None:
    live_context = RecordingStateStoreContext(tmp_path / "live")
    live = open_buffer(backend, live_context)
    for offset, (key, ts) in enumerate([("a", 30), ("c", 25), ("b", 22), ("d", 35)]):
        assert put(live, key, ts, offset)
    assert evicted(live) == [("b", 22), ("c", 25)]
    changelog = live_context.changelog_entries("j-Buffer")
    assert [value is None for _k, value, _t in changelog] == [False] * 4 + [True] * 2
    restored_context = RecordingStateStoreContext(tmp_path / "restored")
    restored = open_buffer(backend, restored_context)
    assert restored.stream_time == -1
    restored_context.restore("j-Buffer", changelog, batch_size=4)
    assert restored.stream_time == 35
    assert not put(restored, "late", 24)
    out: list[BufferedRecord] = []
    restored.put(b"e", b"ve", 50, 9, "in", 1, ())
    restored.evict(out.append)
    assert [(r.key, r.value, r.timestamp, r.offset, r.topic, r.partition, r.headers) for r in out] == [
        (b"a", b"v30a", 30, 0, "in", 1, (("h", b"x"),)), (b"d", b"v35d", 35, 3, "in", 1, (("h", b"x"),))]
    live.close()
    restored.close()


def test_a_reopened_leveldb_buffer_lets_out_every_record_it_kept(tmp_path: Path) -> None:
    """Kafka Streams 4.4.0 starts each eviction at a remembered minimum timestamp that a reopened buffer can
    set past records it still holds (they then never leave); here each eviction scans from the oldest."""
    context = RecordingStateStoreContext(tmp_path)
    buffer = open_buffer("leveldb", context)
    put(buffer, "a", 95)
    put(buffer, "b", 100)
    buffer.flush()
    buffer.close()
    reopened = open_buffer("leveldb", context)
    assert reopened.stream_time == -1  # as Kafka Streams: the buffer's stream time is not kept
    put(reopened, "c", 106)
    assert evicted(reopened) == [("a", 95)]
    put(reopened, "d", 120)
    assert evicted(reopened) == [("b", 100), ("c", 106)]
    reopened.close()


def test_buffer_values_round_trip_and_bad_bytes_get_a_clear_error() -> None:
    headers = (("trace", b"\x00\x01"), ("empty", b""))
    key = buffer_key("ключ".encode(), 1_700_000_000_000, 7)
    assert key[:1] == b"\x00" and key[-4:] == b"\x00\x00\x00\x07"
    for topic in ("orders", None):
        data = encode_changelog_value(b"payload", 1_700_000_000_000, 42, topic, 3, headers)
        assert data.endswith(b"\x00" * 8)  # the buffer time Kafka Streams appends in the changelog
        assert decode(key, data) == BufferedRecord("ключ".encode(), b"payload", 1_700_000_000_000, 42, topic, 3,
                                                   headers)
    with pytest.raises(StreamsError, match="corrupt join buffer value"):
        decode(key, b"\x00\x01")
    with pytest.raises(StreamsError, match="not a time-first buffer key"):
        decode(b"\x01abc", encode_changelog_value(b"v", 1, 0, "t", 0, ()))
