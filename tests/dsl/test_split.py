"""`KStream.split()` with `Branched` (the differential suite checks names and routing against Kafka Streams)."""

from __future__ import annotations

from streamlet.dsl import Branched, Consumed, Produced, StreamsBuilder
from streamlet.record import KeyValue
from streamlet.serdes import Serdes
from streamlet.testing import TopologyTestDriver

STR = Serdes.String()
CONFIG = {"application.id": "split", "default.key.serde": "String", "default.value.serde": "String"}


def test_each_record_goes_to_the_first_matching_branch() -> None:
    builder = StreamsBuilder()
    branches = (builder.stream("in", Consumed(STR, STR)).split("route")
                .branch(lambda k, v: v.startswith("a"), Branched.named("-a"))
                .branch(lambda k, v: len(v) > 2, Branched.with_consumer(lambda s: s.to("long", Produced(STR, STR))))
                .default_branch(Branched.with_function(lambda s: s.map_values(str.upper))))
    assert sorted(branches) == ["route-a", "route0"]
    branches["route-a"].to("a", Produced(STR, STR))
    branches["route0"].to("rest", Produced(STR, STR))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        driver.create_input_topic("in", STR, STR).pipe_key_value_list([("k", "abc"), ("k", "xyz"), ("k", "q")])
        read = {t: driver.create_output_topic(t, STR, STR).read_key_values_to_list() for t in ("a", "long", "rest")}
    assert read == {"a": [KeyValue("k", "abc")], "long": [KeyValue("k", "xyz")], "rest": [KeyValue("k", "Q")]}
