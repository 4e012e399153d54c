"""`KStream.process_values`: a fixed-key processor, whose records keep their key (Kafka Streams' `processValues`)."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import (
    Consumed,
    FixedKeyProcessor,
    FixedKeyProcessorContext,
    FixedKeyRecord,
    Grouped,
    Processor,
    Record,
    Stores,
    StreamsBuilder,
    TopologyError,
)
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {"application.id": "pv", "default.key.serde": "String", "default.value.serde": "String"}


class Tally(FixedKeyProcessor):
    """Per key: how many records so far, in a store; forwards `value#n`, restamped 5 ms later."""

    def init(self, context: FixedKeyProcessorContext) -> None:
        super().init(context)
        self.store: Any = context.get_state_store("tally")

    def process(self, record: FixedKeyRecord) -> None:
        n = int(self.store.get(record.key) or 0) + 1
        self.store.put(record.key, str(n))
        self.context.forward(record.with_value(f"{record.value}#{n}").with_timestamp(record.timestamp + 5))


def tally_topology() -> Any:
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("tally"), S, S))
    b.stream("in", Consumed(S, S)).process_values(Tally, "tally").to("out")
    return b.build()


def test_values_change_keys_and_store_stay_and_forward_restamps() -> None:
    with TopologyTestDriver(tally_topology(), CONFIG, initial_wall_clock_time=0) as driver:
        inp = driver.create_input_topic("in", S, S)
        for key, value, ts in [("a", "x", 10), ("b", "y", 11), ("a", "z", 12)]:
            inp.pipe_input(key, value, ts)
        out = driver.create_output_topic("out", S, S)
        got = [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert got == [("a", "x#1", 15), ("b", "y#1", 16), ("a", "z#2", 17)]
        assert driver.get_key_value_store("tally").get("a") == "2"


def test_describe_names_the_node_as_kafka_streams_does() -> None:
    text = str(tally_topology().describe())
    assert "Processor: KSTREAM-PROCESSVALUES-0000000001 (stores: [tally])" in text
    assert "Sink: KSTREAM-SINK-0000000002 (topic: out)" in text


def test_no_repartition_before_a_grouping_since_the_key_cannot_change() -> None:
    class Same(FixedKeyProcessor):
        def process(self, record: FixedKeyRecord) -> None:
            self.context.forward(record)

    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).process_values(Same).group_by_key(Grouped(S, S)).count()
    assert not b.build().internal_topics.keys() - {"KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog"}
    b = StreamsBuilder()  # process(), by contrast, may change keys
    b.stream("in", Consumed(S, S)).process(lambda: Processor()).group_by_key(Grouped(S, S)).count()
    assert any(spec.kind == "repartition" for spec in b.build().internal_topics.values())


def test_a_processor_cannot_forward_a_record_with_another_key() -> None:
    class Rekey(FixedKeyProcessor):
        def process(self, record: FixedKeyRecord) -> None:
            self.context.forward(Record("other", record.value, record.timestamp))  # type: ignore[arg-type]

    b = StreamsBuilder()
    b.stream("in", Consumed(S, S)).process_values(Rekey).to("out")
    with TopologyTestDriver(b.build(), CONFIG) as driver, pytest.raises(TypeError, match="FixedKeyRecord"):
        driver.create_input_topic("in", S, S).pipe_input("a", "v")


def test_suppliers_not_instances_and_of_fixed_key_processors() -> None:
    b = StreamsBuilder()
    stream = b.stream("in", Consumed(S, S))
    with pytest.raises(TopologyError, match="not a processor instance"):
        stream.process_values(Tally())  # type: ignore[arg-type]
    stream.process_values(lambda: Processor()).to("out")  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="supplier of FixedKeyProcessors"):
        TopologyTestDriver(b.build(), CONFIG)
