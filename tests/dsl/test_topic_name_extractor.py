"""`KStream.to(extractor)` / `Topology.add_sink(name, extractor, ...)`: each record to the topic it names."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import Consumed, Produced, RecordContext, StreamsBuilder, TopicNameExtractor, Topology, TopologyError
from streamlet.actors.record_collector import ProducedRecord, RecordCollector, UnknownTopicError
from streamlet.partitioner import default_partition
from streamlet.record import Record
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"application.id": "route", "default.key.serde": "String", "default.value.serde": "String"}


class ByValue(TopicNameExtractor):
    def extract(self, key: Any, value: Any, record_context: RecordContext) -> str:
        return f"to-{value}"

    def __str__(self) -> str:
        return "ByValue"


def test_records_go_to_the_topics_the_extractor_names() -> None:
    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).to(ByValue(), Produced(S, S))
    with TopologyTestDriver(b.build(), CONFIG, initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic("in", S, S)
        for key, value in [("a", "x"), ("b", "y"), ("c", "x")]:
            inp.pipe_input(key, value, 1)
        assert driver.produced_topic_names() == {"to-x", "to-y"}
        assert driver.create_output_topic("to-x", S, S).read_key_values_to_list() == [("a", "x"), ("c", "x")]
        assert driver.create_output_topic("to-y", S, S).read_key_values_to_list() == [("b", "y")]


def test_the_record_context_is_the_records_timestamp_and_headers_and_the_inputs_position() -> None:
    seen: list[RecordContext] = []

    def extractor(key: Any, value: Any, ctx: RecordContext) -> str:
        seen.append(ctx)
        return "out"

    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).map_values(lambda v: v).to(extractor)
    with TopologyTestDriver(b.build(), CONFIG, initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic("in", S, S)
        inp.pipe_input("a", "1", 7)
        inp.pipe_record(Record("b", "2", 9, (("h", b"v"),)))
    assert [(c.topic, c.partition, c.offset, c.timestamp, c.headers) for c in seen] == [
        ("in", 0, 0, 7, ()), ("in", 0, 1, 9, (("h", b"v"),))]


def test_describe_prints_the_extractor_as_kafka_streams_prints_its_to_string() -> None:
    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).to(ByValue())
    assert "    Sink: KSTREAM-SINK-0000000001 (extractor class: ByValue)\n      <-- KSTREAM-SOURCE-0000000000\n" in \
        str(b.build().describe())
    t = Topology().add_source("src", "in").add_sink("dyn", ByValue(), "src")
    assert "Sink: dyn (extractor class: ByValue)" in str(t.describe())
    assert t.sub_topologies()[0].sink_topics == []  # nothing to check or create at start-up


def test_bad_topics() -> None:
    b = StreamsBuilder()
    with pytest.raises(TopologyError):
        b.stream("in", Consumed(S, S)).to(42)  # type: ignore[arg-type]
    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).to(lambda k, v, ctx: None)
    with TopologyTestDriver(b.build(), CONFIG) as driver, pytest.raises(Exception, match="not a topic"):
        driver.create_input_topic("in", S, S).pipe_input("a", "1")


def test_a_topic_the_runtime_does_not_know_yet_is_partitioned_once_looked_up() -> None:
    """The Kafka runtime learns a dynamically named topic's partition count at the batch boundary; the
    records wait in the collector in order, then go where the sink would have put them."""
    known: dict[str, int] = {}

    def count(topic: str) -> int:
        if topic not in known:
            raise UnknownTopicError(topic)
        return known[topic]

    collector = RecordCollector(count)
    keys = [b"k1", None, b"k2", None, b"k3"]
    for i, key in enumerate(keys):
        collector.defer("new", ProducedRecord(key, str(i).encode(), i, ()), key, i, None)
    assert collector.pending == 5 and collector.deferred_topics() == {"new"}
    with pytest.raises(UnknownTopicError, match="new"):
        collector.drain()
    known["new"] = 4
    collector.place_deferred()
    drained = collector.drain()
    by_value = {r.value: p for (_t, p), rs in drained.items() for r in rs}
    for i, key in enumerate(keys):
        if key is not None:
            assert by_value[str(i).encode()] == default_partition(key, 4)
    assert [by_value[b"1"], by_value[b"3"]] == [0, 1]  # null keys: round robin
    assert sum(map(len, drained.values())) == 5 and collector.pending == 0
