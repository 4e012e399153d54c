"""Where streamlet's TopologyTestDriver behaves as Kafka Streams' driver (issue #16, item 5).

A test ported from Java keeps its meaning: one-argument `pipe_input(value)`, a `Record` without a
timestamp taking the topic's clock, `read_key_values_to_map` keeping tombstones, every produced topic
named, and timestamped DSL stores seen with plain values unless asked for `ValueAndTimestamp`s.
"""

from __future__ import annotations

import pytest

from streamlet.dsl import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows
from streamlet.errors import StreamsError
from streamlet.record import KeyValue, Record
from streamlet.serdes import Serdes
from streamlet.stores.api import ValueAndTimestamp
from streamlet.testing import TopologyTestDriver
from streamlet.testing.store_facades import NO_TIMESTAMP
from streamlet.topology import Topology

STR = Serdes.String()
CONFIG = {"application.id": "driver-like-java", "statestore.cache.max.bytes": 0, "default.key.serde": "String",
          "default.value.serde": "String"}


def _pipe() -> Topology:
    builder = StreamsBuilder()
    builder.stream("in", Consumed(STR, STR)).to("out", Produced(STR, STR))
    return builder.build()


def test_one_argument_pipe_input_is_the_value() -> None:
    with TopologyTestDriver(_pipe(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR, start_timestamp=7)
        out = driver.create_output_topic("out", STR, STR)
        inp.pipe_input("v1")
        inp.pipe_input("v2", timestamp=9)
        inp.pipe_input("k", "v3", 11)
        assert out.read_records_to_list() == [Record(None, "v1", 7), Record(None, "v2", 9), Record("k", "v3", 11)]


def test_a_record_without_timestamp_takes_the_topic_clock_and_advances_it() -> None:
    with TopologyTestDriver(_pipe(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR, start_timestamp=100, auto_advance=10)
        out = driver.create_output_topic("out", STR, STR)
        inp.pipe_record(Record("a", "1", None))  # type: ignore[arg-type]
        inp.pipe_record(Record("b", "2", 5))  # its own timestamp: the clock stays
        inp.pipe_record(Record("c", "3", None))  # type: ignore[arg-type]
        assert [r.timestamp for r in out.read_records_to_list()] == [100, 5, 110]


def test_read_key_values_to_map_keeps_tombstoned_keys() -> None:
    with TopologyTestDriver(_pipe(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        out = driver.create_output_topic("out", STR, STR)
        inp.pipe_key_value_list([("a", "1"), ("b", "2"), ("a", None), ("b", "3")])
        assert out.read_key_values_to_map() == {"a": None, "b": "3"}
        inp.pipe_input(None, "x")
        with pytest.raises(StreamsError, match="None key"):
            out.read_key_values_to_map()


def test_produced_topic_names_keeps_topics_already_read() -> None:
    builder = StreamsBuilder()
    builder.stream("in", Consumed(STR, STR)).group_by(lambda k, v: v).count(Materialized("c")).to_stream().to(
        "out", Produced(STR, Serdes.Long()))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        assert driver.produced_topic_names() == set()
        driver.create_input_topic("in", STR, STR).pipe_input("k", "v", 1)
        driver.create_output_topic("out", STR, Serdes.Long()).read_records_to_list()
        assert driver.produced_topic_names() == {
            "out", "driver-like-java-c-repartition", "driver-like-java-c-changelog"}


def test_timestamped_key_value_store_is_seen_with_plain_values() -> None:
    builder = StreamsBuilder()
    builder.table("in", Consumed(STR, STR), Materialized("rows"))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        driver.create_input_topic("in", STR, STR).pipe_key_value_list([("a", "1"), ("b", "2")])
        plain = driver.get_key_value_store("rows")
        stamped = driver.get_timestamped_key_value_store("rows")
        assert plain.get("a") == "1"
        assert stamped.get("a").value == "1"
        with plain.all() as it:
            assert list(it) == [KeyValue("a", "1"), KeyValue("b", "2")]
        plain.put("c", "3")  # written through the facade: no timestamp, as Java's facade writes it
        assert stamped.get("c") == ValueAndTimestamp("3", NO_TIMESTAMP)
        assert plain.put_if_absent("c", "x") == "3"
        assert plain.delete("a") == "1"
        assert stamped.get("a") is None
        assert plain.approximate_num_entries() == 2


def test_timestamped_window_store_is_seen_with_plain_values() -> None:
    builder = StreamsBuilder()
    (builder.stream("in", Consumed(STR, STR)).group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(10)).count(Materialized("w")))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        driver.create_input_topic("in", STR, STR, start_timestamp=0).pipe_key_value_list([("a", "1"), ("a", "2")])
        plain = driver.get_window_store("w")
        plain.put("b", 5, 0)
        assert driver.get_timestamped_window_store("w").fetch("b", 0) == ValueAndTimestamp(5, NO_TIMESTAMP)
        assert plain.fetch("b", 0) == 5


def test_timestamped_getters_refuse_plain_stores() -> None:
    from streamlet.stores.factory import Stores

    topology = Topology()
    topology.add_source("src", "in", key_deserializer=STR.deserializer, value_deserializer=STR.deserializer)
    topology.add_processor("p", lambda: _Nothing(), "src")
    topology.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("plain"), STR, STR), "p")
    with TopologyTestDriver(topology, CONFIG) as driver:
        driver.get_key_value_store("plain").put("k", "v")
        assert driver.get_key_value_store("plain").get("k") == "v"
        with pytest.raises(StreamsError, match="not a timestamped key-value store"):
            driver.get_timestamped_key_value_store("plain")


class _Nothing:
    def init(self, context: object) -> None:
        pass

    def process(self, record: Record) -> None:
        pass

    def close(self) -> None:
        pass
