"""A store's `Position`: the offset of the last input record that wrote it, per topic and partition (Kafka
Streams' stores update theirs on every write with the record's metadata); reads and punctuators' writes leave
it alone. Checked through the test driver, whose tasks process as the runtime's do."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import (
    KafkaStreams,
    KeyQuery,
    Position,
    PositionBound,
    Processor,
    PunctuationType,
    Serdes,
    StateQueryRequest,
    Stores,
    StreamsNotStartedError,
    Topology,
    UnknownStateStoreError,
)
from streamlet.record import Record
from streamlet.testing import TopologyTestDriver


class _Writer(Processor):
    """Writes "kv" for every record but those whose value is "read" (which only reads it); its punctuator
    writes "kv" too."""

    def init(self, context: Any) -> None:
        self.store = context.get_state_store("kv")
        context.schedule(1000, PunctuationType.STREAM_TIME, lambda ts: self.store.put("punctuated", str(ts)))

    def process(self, record: Record) -> None:
        if record.value == "read":
            self.store.get(record.key)
        else:
            self.store.put(record.key, record.value)


def _topology() -> Topology:
    s = Serdes.String()
    top = Topology()
    top.add_source("left-src", "left", key_deserializer=s.deserializer, value_deserializer=s.deserializer)
    top.add_source("right-src", "right", key_deserializer=s.deserializer, value_deserializer=s.deserializer)
    top.add_processor("writer", _Writer, "left-src", "right-src")
    top.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), s, s), "writer")
    return top


def test_a_store_position_is_the_last_writing_record_of_each_input_partition() -> None:
    s = Serdes.String()
    with TopologyTestDriver(_topology()) as driver:
        left = driver.create_input_topic("left", s, s)
        right = driver.create_input_topic("right", s, s)
        store: Any = driver.get_state_store("kv")
        assert store.position == Position.empty_position()
        left.pipe_input("a", "1", 0)       # left offset 0 writes
        left.pipe_input("b", "2", 10)      # left offset 1 writes
        right.pipe_input("c", "3", 20)     # right offset 0 writes
        left.pipe_input("a", "read", 30)   # left offset 2 only reads
        assert store.position.to_dict() == {"left": {0: 1}, "right": {0: 0}}
        # punctuations fire at stream time 1000 and 2000; their writes carry no input offset
        right.pipe_input("d", "read", 2000)  # right offset 1 only reads
        assert store.get("punctuated") == "2000"
        assert store.position.to_dict() == {"left": {0: 1}, "right": {0: 0}}
        right.pipe_input("d", "4", 2001)     # right offset 2 writes
        assert store.position.to_dict() == {"left": {0: 1}, "right": {0: 2}}


def test_position_merge_keeps_the_larger_offset_and_copies_are_independent() -> None:
    mine = Position.from_map({"t": {0: 5, 1: 2}})
    mine.merge(Position.from_map({"t": {0: 3, 1: 9}, "u": {0: 1}}))
    assert mine.to_dict() == {"t": {0: 5, 1: 9}, "u": {0: 1}}
    copy = mine.copy().with_component("t", 0, 100)
    assert mine.get_partition_positions("t") == {0: 5, 1: 9}
    assert copy.get_partition_positions("t") == {0: 100, 1: 9}
    assert mine.merge(None) is mine


@pytest.mark.parametrize(("seen", "permitted"), [
    ({"t": {0: 5}}, True),        # at the bound
    ({"t": {0: 6}}, True),        # past it
    ({"t": {0: 4}}, False),       # behind it
    ({"u": {0: 9}}, False),       # never saw the bounded topic
    ({}, False),
])
def test_a_position_bound_checks_the_partition_of_the_store_only(seen: dict[str, dict[int, int]],
                                                                 permitted: bool) -> None:
    bound = PositionBound.at(Position.from_map({"t": {0: 5, 1: 50}}))
    assert bound.permits(Position.from_map(seen), 0) is permitted
    assert bound.permits(Position.from_map(seen), 2)  # the bound says nothing of partition 2
    assert PositionBound.unbounded().permits(Position.from_map(seen), 0)


def test_query_errors_before_start_are_kafka_streams() -> None:
    streams = KafkaStreams(_topology(), {"application.id": "position-errors", "bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(UnknownStateStoreError):
        streams.query(StateQueryRequest.in_store("nope").with_query(KeyQuery.with_key("a")))
    with pytest.raises(StreamsNotStartedError):
        streams.query(StateQueryRequest.in_store("kv").with_query(KeyQuery.with_key("a")))


def test_requests_and_queries_are_immutable_and_refuse_a_none_key() -> None:
    request = StateQueryRequest.in_store("kv").with_query(KeyQuery.with_key("a"))
    narrowed = request.with_partitions([1, 2]).require_active()
    assert request.is_all_partitions() and not request.is_require_active()
    assert narrowed.get_partitions() == {1, 2} and narrowed.is_require_active()
    with pytest.raises(ValueError, match="key cannot be null"):
        KeyQuery.with_key(None)
