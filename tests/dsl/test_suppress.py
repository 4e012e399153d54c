"""`KTable.suppress`: final window results and time limits (the differential suite checks the details
against Kafka Streams; these show the behaviour and the errors)."""

from __future__ import annotations

import pytest

from streamlet.dsl import (
    BufferConfig,
    Consumed,
    Grouped,
    Materialized,
    Produced,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from streamlet.errors import StreamsError, TopologyError
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology
from streamlet.windowed_serdes import TimeWindowedSerde

STR, LONG = Serdes.String(), Serdes.Long()
CONFIG = {"application.id": "suppress", "default.key.serde": "String", "default.value.serde": "String"}


def _windowed_count(suppressed: Suppressed) -> Topology:
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(STR, STR)).group_by_key(Grouped(STR, STR))
     .windowed_by(TimeWindows.of_size_and_grace(10, 5)).count()
     .suppress(suppressed).to_stream().to("out", Produced(TimeWindowedSerde(STR, 10), LONG)))
    return builder.build()


def test_until_window_closes_emits_each_window_once_when_it_closes() -> None:
    with TopologyTestDriver(_windowed_count(Suppressed.until_window_closes(BufferConfig.unbounded())),
                            CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        out = driver.create_output_topic("out", TimeWindowedSerde(STR, 10), LONG)
        for key, ts in [("a", 1), ("a", 4), ("b", 8), ("a", 12), ("a", 14)]:
            inp.pipe_input(key, "v", ts)
        assert out.is_empty()  # window [0,10) closes at stream time 15
        inp.pipe_input("c", "v", 15)
        assert [(r.key.key, r.key.window.start, r.value, r.timestamp) for r in out.read_records_to_list()] == [
            ("a", 0, 2, 4), ("b", 0, 1, 8)]
        assert "suppress-KTABLE-SUPPRESS-STATE-STORE-0000000004-changelog" in driver.produced_topic_names()


def test_until_time_limit_emits_the_latest_value_after_the_limit() -> None:
    builder = StreamsBuilder()
    (builder.table("in", Consumed(STR, STR), Materialized("t"))
     .suppress(Suppressed.until_time_limit(10, BufferConfig.max_records(10)).with_name("hold"))
     .to_stream().to("out", Produced(STR, STR)))
    topology = builder.build()
    assert "Processor: hold (stores: [hold-store])" in str(topology.describe())
    with TopologyTestDriver(topology, CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        out = driver.create_output_topic("out", STR, STR)
        inp.pipe_input("a", "1", 0)
        inp.pipe_input("a", "2", 5)
        inp.pipe_input("b", "1", 9)
        assert out.is_empty()
        inp.pipe_input("c", "1", 10)  # a was buffered at 0: due at 10, with its latest value
        assert out.read_records_to_list() == [Record("a", "2", 5)]


def test_a_full_buffer_emits_early_or_fails() -> None:
    builder = StreamsBuilder()
    (builder.table("in", Consumed(STR, STR)).suppress(Suppressed.until_time_limit(100, BufferConfig.max_records(1)))
     .to_stream().to("out", Produced(STR, STR)))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        inp.pipe_input("a", "1", 0)
        inp.pipe_input("b", "1", 1)  # two keys in a one-record buffer: the oldest goes out early
        assert driver.create_output_topic("out", STR, STR).read_records_to_list() == [Record("a", "1", 0)]
    strict = Suppressed.until_window_closes(BufferConfig.max_records(1).shut_down_when_full())
    with TopologyTestDriver(_windowed_count(strict), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        inp.pipe_input("a", "v", 1)
        with pytest.raises(StreamsError, match="buffer exceeded its max capacity"):
            inp.pipe_input("b", "v", 2)


def test_final_results_need_a_windowed_aggregation_and_a_strict_buffer() -> None:
    table = StreamsBuilder().stream("in").group_by_key().count()
    with pytest.raises(TopologyError, match="only defined for windowed computations"):
        table.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    with pytest.raises(TopologyError, match="strict buffer config"):
        Suppressed.until_window_closes(BufferConfig.max_records(3))
