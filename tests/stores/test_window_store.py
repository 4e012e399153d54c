"""Window stores on both backends: reads, retention, duplicates, the changelog bytes and restoration."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamlet.errors import InvalidStateStoreError, TopologyError
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.stores.api import ValueAndTimestamp
from streamlet.stores.factory import Stores
from streamlet.stores.window.api import WindowBytesStoreSupplier
from streamlet.stores.window.typed import TypedWindowStore
from streamlet.windowed import TimeWindow, Windowed
from tests.stores.context import RecordingStateStoreContext

SUPPLIERS: dict[str, Callable[..., WindowBytesStoreSupplier]] = {
    "leveldb": Stores.persistent_window_store,
    "memory": Stores.in_memory_window_store,
}


@pytest.fixture(params=sorted(SUPPLIERS))
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def build(backend: str, context: RecordingStateStoreContext, *, retention: int = 100, size: int = 10,
          duplicates: bool = False, timestamped: bool = False, logging: bool = True,
          name: str = "win") -> TypedWindowStore:
    supplier = SUPPLIERS[backend](name, retention, size, duplicates)
    factory = Stores.timestamped_window_store_builder if timestamped else Stores.window_store_builder
    builder = factory(supplier, Serdes.String(), Serdes.Long())
    builder = builder.with_logging_enabled() if logging else builder.with_logging_disabled()
    store = builder.build()
    store.init(context)
    return store


def long_bytes(n: int) -> bytes:
    return struct.pack(">q", n)


def test_put_and_fetch_single_windows_and_ranges(backend: str, context: RecordingStateStoreContext) -> None:
    store = build(backend, context)
    store.put("a", 1, 0)
    store.put("a", 2, 10)
    store.put("a", 3, 20)
    store.put("b", 4, 10)
    store.put("ab", 5, 10)  # a longer key starting with "a" must not show up in "a"'s windows
    assert store.fetch("a", 10) == 2
    assert store.fetch("a", 5) is None
    assert store.fetch("zz", 10) is None
    with store.fetch("a", 5, 20) as windows:
        assert list(windows) == [KeyValue(10, 2), KeyValue(20, 3)]
    assert list(store.fetch("a", 30, 40)) == []
    assert list(store.fetch_all(10, 10)) == [
        KeyValue(Windowed("a", TimeWindow(10, 20)), 2),
        KeyValue(Windowed("ab", TimeWindow(10, 20)), 5),
        KeyValue(Windowed("b", TimeWindow(10, 20)), 4),
    ]
    assert [kv.key.window.start for kv in store.all()] == [0, 10, 10, 10, 20]


def test_put_none_deletes_a_window(backend: str, context: RecordingStateStoreContext) -> None:
    store = build(backend, context)
    store.put("a", 1, 0)
    store.put("a", None, 0)
    assert store.fetch("a", 0) is None
    assert list(store.all()) == []


def test_windows_expire_once_the_latest_start_passes_their_retention(
    backend: str, context: RecordingStateStoreContext
) -> None:
    store = build(backend, context, retention=100)
    store.put("a", 1, 0)
    store.put("a", 2, 50)
    store.put("a", 3, 100)  # observed time 100: windows starting at or before 0 are expired
    assert store.fetch("a", 0) is None
    assert [kv.key for kv in store.fetch("a", 0, 200)] == [50, 100]
    store.put("b", 9, 0)  # too late: dropped
    assert store.fetch("b", 0) is None
    store.put("a", 4, 150)
    assert [kv.key for kv in store.fetch("a", 0, 200)] == [100, 150]
    store.put("a", 5, 1_000_000)  # far ahead: every older window goes
    assert list(store.all()) == [KeyValue(Windowed("a", TimeWindow(1_000_000, 1_000_010)), 5)]


def test_retained_duplicates_are_all_kept_in_insertion_order(backend: str, context: RecordingStateStoreContext) -> None:
    store = build(backend, context, duplicates=True)
    store.put("a", 1, 10)
    store.put("a", 2, 10)
    store.put("a", None, 10)  # ignored: nothing to delete among duplicates
    assert list(store.fetch("a", 10, 10)) == [KeyValue(10, 1), KeyValue(10, 2)]
    assert store.fetch("a", 10) == 1


def test_fetch_list_is_what_the_range_fetch_iterates(backend: str, context: RecordingStateStoreContext) -> None:
    """The stream-stream join reads its matches with `fetch_list`: the same entries, in the same order,
    as a range `fetch`, duplicates and expiry included."""
    store = build(backend, context, duplicates=True, retention=50)
    for start, value in [(30, 1), (10, 2), (30, 3), (60, 4), (45, 5)]:
        store.put("a", value, start)
    store.put("ab", 6, 30)  # a longer key starting with "a" is not "a"'s
    store.put("b", 7, 30)
    for time_from, time_to in [(0, 100), (30, 30), (31, 44), (45, 60), (200, 300)]:
        with store.fetch("a", time_from, time_to) as entries:
            expected = list(entries)
        assert store.fetch_list("a", time_from, time_to) == expected
    assert store.fetch_list("a", 0, 100) == [KeyValue(30, 1), KeyValue(30, 3), KeyValue(45, 5), KeyValue(60, 4)]


def test_changelog_keys_are_kafka_streams_window_key_schema(backend: str, context: RecordingStateStoreContext) -> None:
    store = build(backend, context, duplicates=True)
    context.at(77)
    store.put("k", 5, 1_000)
    store.put("k", 6, 1_000)
    assert [(c.key, c.value, c.timestamp) for c in context.changelog] == [
        (b"k" + struct.pack(">q", 1_000) + struct.pack(">i", 1), long_bytes(5), 77),
        (b"k" + struct.pack(">q", 1_000) + struct.pack(">i", 2), long_bytes(6), 77),
    ]


def test_timestamped_store_logs_plain_values_with_their_own_timestamp(
    backend: str, context: RecordingStateStoreContext
) -> None:
    store = build(backend, context, timestamped=True)
    context.at(500)
    store.put("k", ValueAndTimestamp(3, 42), 0)
    store.put("k", None, 0)
    assert [(c.key, c.value, c.timestamp) for c in context.changelog] == [
        (b"k" + bytes(8) + bytes(4), long_bytes(3), 42),
        (b"k" + bytes(8) + bytes(4), None, 500),
    ]
    with pytest.raises(TypeError):
        store.put("k", 3, 0)


def test_restore_rebuilds_the_store_from_its_changelog(backend: str, tmp_path: Path) -> None:
    first = RecordingStateStoreContext(tmp_path / "first")
    store = build(backend, first, timestamped=True, retention=100)
    for start, count in [(0, 1), (10, 2), (0, 3), (150, 4)]:  # 150 expires window 0 (and 10)
        first.at(start + 1)
        store.put("k", ValueAndTimestamp(count, start + 1), start)
    store.put("j", ValueAndTimestamp(7, 160), 60)
    store.put("j", None, 60)
    entries = first.changelog_entries("win")
    store.close()

    second = RecordingStateStoreContext(tmp_path / "second")
    restored = build(backend, second, timestamped=True, retention=100)
    assert list(restored.all()) == []
    second.restore("win", entries)
    assert second.changelog == []  # restoring writes nothing back to the changelog
    assert list(restored.all()) == [KeyValue(Windowed("k", TimeWindow(150, 160)), ValueAndTimestamp(4, 151))]
    assert restored.fetch("k", 0) is None  # expired during restoration, as the original


def test_persistent_store_keeps_windows_across_reopen(tmp_path: Path) -> None:
    context = RecordingStateStoreContext(tmp_path)
    store = build("leveldb", context, retention=200_000, size=60_000)
    store.put("a", 1, 0)
    store.put("a", 2, 120_000)  # another segment
    store.flush()
    store.close()
    reopened = build("leveldb", context, retention=200_000, size=60_000)
    assert [kv.key for kv in reopened.fetch("a", 0, 200_000)] == [0, 120_000]
    reopened.put("a", 3, 500_000)  # drops both old segments
    assert [kv.key for kv in reopened.fetch("a", 0, 1_000_000)] == [500_000]
    reopened.close()
    assert [kv.key for kv in build("leveldb", context, retention=200_000, size=60_000).fetch("a", 0, 10**6)] == [
        500_000]


def test_closed_store_refuses_use(backend: str, context: RecordingStateStoreContext) -> None:
    store = build(backend, context)
    store.close()
    assert not store.is_open
    with pytest.raises(InvalidStateStoreError):
        store.put("a", 1, 0)


@pytest.mark.parametrize(("retention", "size"), [(5, 10), (-1, 1), (10, -1)])
def test_shape_is_checked_as_kafka_streams_does(retention: int, size: int) -> None:
    with pytest.raises(TopologyError):
        Stores.persistent_window_store("w", retention, size)


def test_window_changelog_is_compacted_and_deleted_after_retention_plus_a_day() -> None:
    builder: Any = Stores.window_store_builder(Stores.in_memory_window_store("w", 1_000, 10))
    assert builder.logging_config == {"cleanup.policy": "compact,delete", "retention.ms": str(1_000 + 86_400_000)}


def test_a_window_size_of_zero_is_accepted_as_kafka_streams_does() -> None:
    """Zero-width join windows need window stores of size 0 (retention = the grace period)."""
    for factory in (Stores.persistent_window_store, Stores.in_memory_window_store):
        assert factory("w", 0, 0, True).window_size_ms == 0
