"""Records without a key at a repartition: dropped, unless a left join reads the repartitioned stream
(Kafka Streams 3.9's rule; the differential suite compares the repartition topics themselves)."""

from __future__ import annotations

from streamlet.dsl import Consumed, Produced, StreamsBuilder
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

STR = Serdes.String()
CONFIG = {"application.id": "nullkeys", "default.key.serde": "String", "default.value.serde": "String"}


def _run(left_join: bool) -> tuple[list[KeyValue], list[KeyValue]]:
    builder = StreamsBuilder()
    table = builder.table("t", Consumed(STR, STR))
    stream = builder.stream("in", Consumed(STR, STR)).repartition()
    if left_join:
        stream = stream.left_join(table, lambda v, t: f"{v}+{t}")
    stream.to("out", Produced(STR, STR))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        inp = driver.create_input_topic("in", STR, STR)
        inp.pipe_input(None, "x", 1)
        inp.pipe_input("k", "y", 2)
        [topic] = [t for t in driver.produced_topic_names() if t.endswith("-repartition")]
        repartitioned = driver.create_output_topic(topic, STR, STR).read_key_values_to_list()
        return repartitioned, driver.create_output_topic("out", STR, STR).read_key_values_to_list()


def test_a_repartition_drops_records_without_a_key() -> None:
    assert _run(left_join=False) == ([KeyValue("k", "y")], [KeyValue("k", "y")])


def test_a_left_join_downstream_keeps_them() -> None:
    assert _run(left_join=True) == ([KeyValue(None, "x"), KeyValue("k", "y")],
                                    [KeyValue(None, "x+None"), KeyValue("k", "y+None")])
