"""`KTable.group_by` with adder and subtractor (the differential suite checks the details, including
the repartition topic's bytes, against Kafka Streams)."""

from __future__ import annotations

from streamlet.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from streamlet.dsl.change import Change
from streamlet.dsl.change_serde import ChangeDeserializer, ChangeSerializer
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

STR, LONG = Serdes.String(), Serdes.Long()
CONFIG = {"application.id": "regroup", "statestore.cache.max.bytes": 0, "default.key.serde": "String",
          "default.value.serde": "String"}


def test_a_row_that_changes_group_leaves_the_old_one() -> None:
    builder = StreamsBuilder()
    (builder.table("users", Consumed(STR, STR)).group_by(lambda user, city: KeyValue(city, user), Grouped(STR, STR))
     .count(Materialized("per-city")).to_stream().to("out", Produced(STR, LONG)))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        users = driver.create_input_topic("users", STR, STR)
        out = driver.create_output_topic("out", STR, LONG)
        users.pipe_input("ann", "paris", 1)
        users.pipe_input("bob", "paris", 2)
        users.pipe_input("ann", "rome", 3)  # leaves paris, joins rome
        users.pipe_input("bob", None, 4)  # deleted: leaves paris
        assert out.read_key_values_to_list() == [KeyValue("paris", 1), KeyValue("paris", 2), KeyValue("paris", 1),
                                                 KeyValue("rome", 1), KeyValue("paris", 0)]
        assert driver.get_key_value_store("per-city").get("rome") == 1


def test_reduce_and_aggregate_apply_the_subtractor_before_the_adder() -> None:
    builder = StreamsBuilder()
    grouped = builder.table("t", Consumed(STR, STR)).group_by(lambda k, v: (k[0], v))
    grouped.reduce(lambda a, b: a + "+" + b, lambda a, b: a + "-" + b).to_stream().to("reduced")
    grouped.aggregate(lambda: "", lambda k, v, a: a + v, lambda k, v, a: a.replace(v, "", 1)).to_stream().to("agg")
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        t = driver.create_input_topic("t", STR, STR)
        t.pipe_input("a1", "x", 1)
        t.pipe_input("a2", "y", 2)
        t.pipe_input("a1", "z", 3)  # same group: one update with old and new
        assert driver.create_output_topic("reduced", STR, STR).read_values_to_list() == ["x", "x+y", "x+y-x+z"]
        assert driver.create_output_topic("agg", STR, STR).read_values_to_list() == ["x", "xy", "yz"]


def test_the_repartitioned_change_has_kafka_streams_bytes() -> None:
    serializer, deserializer = ChangeSerializer(STR.serializer), ChangeDeserializer(STR.deserializer)
    for change, data in [(Change("ab", None), b"ab\x01"), (Change(None, "c"), b"c\x00"),
                         (Change("ab", "c"), b"\x04abc\x02")]:
        assert serializer.serialize("t", change) == data
        assert deserializer.deserialize("t", data) == change
