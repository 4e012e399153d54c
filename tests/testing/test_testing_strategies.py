"""streamlet.testing.strategies and the pytest plugin's fixtures, used as a user would: properties of
a topology stated over drawn input (the README's property-based testing example is the first test)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from hypothesis import find, given, settings
from hypothesis import strategies as st

from streamlet import Consumed, Produced, Serdes, StreamsBuilder, Topology
from streamlet.record import Record
from streamlet.testing import TopologyTestDriver
from streamlet.testing.strategies import WindowSpec, keys, records, window_specs

CONFIG = {"application.id": "props", "statestore.cache.max.bytes": 0}


def count_topology() -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(key_serde=Serdes.String(), value_serde=Serdes.Long()))
     .group_by_key().count().to_stream()
     .to("out", Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()


@settings(max_examples=40, deadline=None)
@given(batch=records(keys=keys(max_keys=4), values=st.integers(0, 9), max_disorder_ms=2_000, tombstones=True))
def test_a_count_counts_every_record_with_a_value(batch: list[Record]) -> None:
    """The README's example: whatever the order and the tombstones, a key's last count is the number
    of its records with a value (Kafka Streams' count() skips null values)."""
    with TopologyTestDriver(count_topology(), CONFIG) as driver:
        driver.create_input_topic("in", Serdes.String(), Serdes.Long()).pipe_record_list(batch)
        counts = driver.create_output_topic("out", Serdes.String(), Serdes.Long()).read_key_values_to_map()
    assert counts == Counter(r.key for r in batch if r.value is not None)


def windowed_count_topology(spec: WindowSpec) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(key_serde=Serdes.String(), value_serde=Serdes.Long()))
     .group_by_key().windowed_by(spec.time_windows()).count().to_stream()
     .map(lambda wk, n: (f"{wk.key}@{wk.window.start}", n))
     .to("out", Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()


def expected_window_counts(spec: WindowSpec, batch: list[Record]) -> Counter[str]:
    """Kafka Streams' rule, in plain Python: a record counts in a window unless stream time (the highest
    timestamp seen, this record included) has passed the window's end plus the grace period."""
    stream_time = -1
    counts: Counter[str] = Counter()
    for r in batch:
        stream_time = max(stream_time, r.timestamp)
        for start in spec.starts_of(r.timestamp):
            if start + spec.size_ms > stream_time - spec.grace_ms:
                counts[f"{r.key}@{start}"] += 1
    return counts


@settings(max_examples=40, deadline=None)
@given(spec=window_specs(), batch=records(keys=keys(max_keys=3), max_disorder_ms=3_000, late=True, late_by_ms=20_000))
def test_a_windowed_count_drops_exactly_the_records_past_grace(spec: WindowSpec, batch: list[Record]) -> None:
    with TopologyTestDriver(windowed_count_topology(spec), CONFIG) as driver:
        driver.create_input_topic("in", Serdes.String(), Serdes.Long()).pipe_record_list(batch)
        counts = driver.create_output_topic("out", Serdes.String(), Serdes.Long()).read_key_values_to_map()
    assert counts == expected_window_counts(spec, batch)


@settings(max_examples=60, deadline=None)
@given(batch=records(max_disorder_ms=500, max_step_ms=200, with_headers=True))
def test_records_are_disordered_within_the_bound(batch: list[Record]) -> None:
    highest = -1
    for r in batch:
        assert r.timestamp >= highest - 500, "a record came more than max_disorder_ms before an earlier one"
        highest = max(highest, r.timestamp)
        assert all(isinstance(name, str) and isinstance(value, bytes) for name, value in r.headers)


def test_the_strategies_draw_what_they_promise() -> None:
    late = find(records(min_size=5, late=True, late_by_ms=50_000, max_step_ms=10),
                lambda rs: any(r.timestamp < rs[0].timestamp - 40_000 for r in rs))
    assert any(r.timestamp < late[0].timestamp - 40_000 for r in late)
    disordered = find(records(min_size=2, max_disorder_ms=1_000),
                      lambda rs: any(b.timestamp < a.timestamp for a, b in pairwise(rs)))
    assert len(disordered) >= 2
    assert find(records(min_size=1, tombstones=True), lambda rs: any(r.value is None for r in rs))
    hopping = find(window_specs(), lambda s: s.advance_ms < s.size_ms)
    assert hopping.size_ms % hopping.advance_ms == 0
    assert WindowSpec(10_000, 5_000, 0).starts_of(12_345) == [10_000, 5_000]


def test_the_driver_fixture_gives_a_driver(topology_test_driver: Callable[..., Any]) -> None:
    driver = topology_test_driver(count_topology(), CONFIG)
    driver.create_input_topic("in", Serdes.String(), Serdes.Long()).pipe_input("k", 1)
    assert driver.create_output_topic("out", Serdes.String(), Serdes.Long()).read_key_values_to_map() == {"k": 1}
