"""Windowed aggregations through the TopologyTestDriver: tumbling and hopping windows, grace, the
window store, the windowed serdes, and a property test against a plain Python model."""

from __future__ import annotations

import struct
from collections import defaultdict
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet import (
    Consumed,
    Materialized,
    Serdes,
    StreamsBuilder,
    TimeWindow,
    TimeWindows,
    Windowed,
    WindowedSerdes,
)
from streamlet.errors import TopologyError
from streamlet.record import KeyValue
from streamlet.stores.api import ValueAndTimestamp
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology

CONFIG = {"default.key.serde": "String", "default.value.serde": "String", "statestore.cache.max.bytes": 0}


def windowed_count(windows: TimeWindows, materialized: Materialized | None = None) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("input", Consumed(Serdes.String(), Serdes.String()))
     .group_by_key()
     .windowed_by(windows)
     .count(materialized or Materialized("counts"))
     .to_stream()
     .to("output"))
    return builder.build()


def run(topology: Topology, records: list[tuple[str | None, str | None, int]],
        window_size: int) -> list[tuple[Windowed, int, int]]:
    """Pipe (key, value, timestamp) records; return (windowed key, count, timestamp) outputs."""
    with TopologyTestDriver(topology, CONFIG) as driver:
        source = driver.create_input_topic("input", Serdes.String(), Serdes.String())
        for key, value, timestamp in records:
            source.pipe_input(key, value, timestamp)
        output = driver.create_output_topic(
            "output", WindowedSerdes.time_windowed_serde_from(Serdes.String(), window_size), Serdes.Long())
        return [(r.key, r.value, r.timestamp) for r in output.read_records_to_list()]


def test_tumbling_count_emits_every_update_keyed_by_window() -> None:
    out = run(windowed_count(TimeWindows.of_size_with_no_grace(timedelta(seconds=1))),
              [("a", "x", 100), ("a", "x", 900), ("b", "x", 500), ("a", "x", 1000), ("a", "x", 1999)], 1000)
    assert out == [
        (Windowed("a", TimeWindow(0, 1000)), 1, 100),
        (Windowed("a", TimeWindow(0, 1000)), 2, 900),
        (Windowed("b", TimeWindow(0, 1000)), 1, 500),
        (Windowed("a", TimeWindow(1000, 2000)), 1, 1000),
        (Windowed("a", TimeWindow(1000, 2000)), 2, 1999),
    ]


def test_hopping_windows_count_a_record_in_every_window_it_falls_into() -> None:
    windows = TimeWindows.of_size_with_no_grace(10).advance_by(5)
    assert [(w.start, w.end) for w in windows.windows_for(12)] == [(5, 15), (10, 20)]
    assert [(w.start, w.end) for w in windows.windows_for(3)] == [(0, 10)]
    out = run(windowed_count(windows), [("k", "v", 3), ("k", "v", 7), ("k", "v", 12)], 10)
    assert [(w.window.start, count) for w, count, _ in out] == [(0, 1), (0, 2), (5, 1), (5, 2), (10, 1)]


def test_records_later_than_window_end_plus_grace_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    topology = windowed_count(TimeWindows.of_size_and_grace(10, 5))
    out = run(topology, [("k", "v", 1), ("k", "v", 14), ("k", "v", 2), ("k", "v", 15), ("k", "v", 3)], 10)
    # At stream time 14, [0,10) closes at 15: still open. At 15 it is closed and the record at 3 is dropped.
    assert [(w.window.start, count) for w, count, _ in out] == [(0, 1), (10, 1), (0, 2), (10, 2)]
    assert "Skipping record for expired window" in caplog.text


def test_null_keys_are_dropped_and_null_values_counted_as_kafka_streams_does() -> None:
    out = run(windowed_count(TimeWindows.of_size_with_no_grace(10)), [(None, "v", 1), ("k", None, 2)], 10)
    assert [(w.key, count) for w, count, _ in out] == [("k", 1)]


def test_output_timestamp_is_the_largest_timestamp_in_the_window() -> None:
    out = run(windowed_count(TimeWindows.of_size_and_grace(10, 100)), [("k", "v", 8), ("k", "v", 2)], 10)
    assert [(count, ts) for _, count, ts in out] == [(1, 8), (2, 8)]


def test_window_store_is_readable_through_the_driver() -> None:
    with TopologyTestDriver(windowed_count(TimeWindows.of_size_and_grace(10, 20)), CONFIG) as driver:
        source = driver.create_input_topic("input", Serdes.String(), Serdes.String())
        for ts in (1, 5, 12):
            source.pipe_input("k", "v", ts)
        store = driver.get_timestamped_window_store("counts")
        assert store.retention_ms == 30  # size + grace
        assert store.fetch("k", 0) == ValueAndTimestamp(2, 5)
        assert list(store.fetch("k", 0, 100)) == [KeyValue(0, ValueAndTimestamp(2, 5)),
                                                  KeyValue(10, ValueAndTimestamp(1, 12))]
        plain = driver.get_window_store("counts")  # plain values, as Kafka Streams' driver shows them
        assert plain.retention_ms == 30
        assert plain.fetch("k", 0) == 2
        assert list(plain.fetch("k", 0, 100)) == [KeyValue(0, 2), KeyValue(10, 1)]
        assert [(kv.key.window.start, kv.value) for kv in plain.all()] == [(0, 2), (10, 1)]
        source.pipe_input("k", "v", 31)  # latest window start 30: the window at 0 leaves the store
        assert store.fetch("k", 0) is None
        assert [kv.key for kv in store.fetch("k", 0, 100)] == [10, 30]


def test_in_memory_store_type_and_retention_option() -> None:
    topology = windowed_count(TimeWindows.of_size_with_no_grace(10),
                              Materialized("counts", store_type="in_memory", retention=1000))
    with TopologyTestDriver(topology, CONFIG) as driver:
        source = driver.create_input_topic("input", Serdes.String(), Serdes.String())
        source.pipe_input("k", "v", 1)
        source.pipe_input("k", "v", 500)
        store = driver.get_window_store("counts")
        assert not store.persistent
        assert store.retention_ms == 1000
        assert store.fetch("k", 0) == 1  # kept: retention is longer than size + grace


def test_retention_shorter_than_size_plus_grace_is_refused() -> None:
    with pytest.raises(TopologyError, match="must be no smaller than its window size plus the grace period"):
        windowed_count(TimeWindows.of_size_and_grace(10, 5), Materialized("counts", retention=12))


def test_windowed_reduce_and_aggregate() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("input", Consumed(Serdes.String(), Serdes.String())).group_by_key()
    windows = TimeWindows.of_size_with_no_grace(10)
    grouped.windowed_by(windows).reduce(lambda a, b: a + b).to_stream().to("reduced")
    (grouped.windowed_by(windows)
     .aggregate(lambda: 0, lambda k, v, agg: agg + len(v), Materialized(value_serde=Serdes.Long()))
     .to_stream().to("aggregated"))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        source = driver.create_input_topic("input", Serdes.String(), Serdes.String())
        for value, ts in (("ab", 1), ("c", 2), ("def", 11)):
            source.pipe_input("k", value, ts)
        key_serde = WindowedSerdes.time_windowed_serde_from(Serdes.String(), 10)
        reduced = driver.create_output_topic("reduced", key_serde, Serdes.String()).read_key_values_to_list()
        aggregated = driver.create_output_topic("aggregated", key_serde, Serdes.Long()).read_key_values_to_list()
    assert [(kv.key.window.start, kv.value) for kv in reduced] == [(0, "ab"), (0, "abc"), (10, "def")]
    assert [(kv.key.window.start, kv.value) for kv in aggregated] == [(0, 2), (0, 3), (10, 3)]


def test_time_windowed_serde_bytes_match_java() -> None:
    serde = WindowedSerdes.time_windowed_serde_from(Serdes.String(), timedelta(minutes=1))
    data = serde.serializer.serialize("t", Windowed("user", TimeWindow(60_000, 120_000)))
    assert data == b"user" + struct.pack(">q", 60_000)
    assert serde.deserializer.deserialize("t", data) == Windowed("user", TimeWindow(60_000, 120_000))
    unsized = WindowedSerdes.time_windowed_serde_from("String")
    assert unsized.deserializer.deserialize("t", data) == Windowed("user", TimeWindow(60_000, (1 << 63) - 1))
    assert str(Windowed("user", TimeWindow(0, 10))) == "[user@0/10]"


@pytest.mark.parametrize("bad", [lambda: TimeWindows.of_size_with_no_grace(0),
                                 lambda: TimeWindows.of_size_and_grace(10, -1),
                                 lambda: TimeWindows.of_size_with_no_grace(10).advance_by(11),
                                 lambda: TimeWindows.of_size_with_no_grace(10).advance_by(0)])
def test_invalid_windows_are_refused(bad: object) -> None:
    with pytest.raises(TopologyError):
        bad()  # type: ignore[operator]


def model_counts(records: list[tuple[str, int]], size: int, advance: int, grace: int) -> dict[tuple[str, int], int]:
    """Kafka Streams' rule written plainly: a record counts in each window containing it, unless the
    window ended at or before (the largest timestamp seen so far - grace)."""
    counts: dict[tuple[str, int], int] = defaultdict(int)
    stream_time = -1
    for key, ts in records:
        stream_time = max(stream_time, ts)
        for start in range(0, ts + 1, advance):
            if start <= ts < start + size and start + size > stream_time - grace:
                counts[(key, start)] += 1
    return dict(counts)


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 60)), max_size=30),
    size=st.integers(1, 20),
    advance_ratio=st.sampled_from([1, 2, 4]),
    grace=st.integers(0, 10),
)
def test_windowed_counts_match_a_python_model(records: list[tuple[str, int]], size: int, advance_ratio: int,
                                              grace: int) -> None:
    advance = max(1, size // advance_ratio)
    windows = TimeWindows.of_size_and_grace(size, grace).advance_by(advance)
    out = run(windowed_count(windows, Materialized("counts", store_type="in_memory")),
              [(k, "v", ts) for k, ts in records], size)
    final = {(w.key, w.window.start): count for w, count, _ in out}
    assert final == model_counts(records, size, advance, grace)
