"""What `StreamsBuilder.build()` hands the runtime: internal topics, serdes, stores, sources and sinks."""

from __future__ import annotations

import pytest

from streamlet.dsl import (
    Consumed,
    Grouped,
    KGroupedStream,
    KStream,
    KTable,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    StreamsBuilder,
)
from streamlet.errors import TopologyError
from streamlet.offset_reset import AutoOffsetReset
from streamlet.processor import RecordTimestampExtractor, WallclockTimestampExtractor
from streamlet.serdes import LongSerde, Serdes, StringSerde
from streamlet.stores.factory import Stores
from streamlet.stores.keyvalue.builders import TimestampedKeyValueStoreBuilder
from streamlet.topology import ProcessorSpec, SinkSpec, SourceSpec, Topology
from tests.dsl.topologies import PassThrough, wordcount


def _source(topology: Topology, name: str) -> SourceSpec:
    spec = topology.nodes[name]
    assert isinstance(spec, SourceSpec)
    return spec


def _sink(topology: Topology, name: str) -> SinkSpec:
    spec = topology.nodes[name]
    assert isinstance(spec, SinkSpec)
    return spec


def _store(topology: Topology, name: str) -> TimestampedKeyValueStoreBuilder:
    builder = topology.store_builders[name]
    assert isinstance(builder, TimestampedKeyValueStoreBuilder)
    return builder


def test_wordcount_registers_its_repartition_topic_unprefixed_and_no_changelog() -> None:
    topology = wordcount()
    assert list(topology.internal_topics) == ["counts-store-repartition"]
    spec = topology.internal_topics["counts-store-repartition"]
    assert spec.kind == "repartition"
    assert spec.num_partitions is None
    assert _sink(topology, "counts-store-repartition-sink").topic == "counts-store-repartition"
    assert _source(topology, "counts-store-repartition-source").topics == ["counts-store-repartition"]
    assert [s.id for s in topology.sub_topologies()] == [0, 1]
    assert topology.store_users == {"counts-store": ["KSTREAM-AGGREGATE-0000000003"]}


def test_repartition_source_uses_record_timestamps_whatever_the_default() -> None:
    topology = wordcount()
    assert isinstance(_source(topology, "counts-store-repartition-source").timestamp_extractor,
                      RecordTimestampExtractor)
    assert _source(topology, "KSTREAM-SOURCE-0000000000").timestamp_extractor is None


def test_consumed_options_reach_the_source() -> None:
    builder = StreamsBuilder()
    extractor = WallclockTimestampExtractor()
    builder.stream(["a", "b"], Consumed(Serdes.String(), "Long", extractor, "latest")).to("out")
    source = _source(builder.build(), "KSTREAM-SOURCE-0000000000")
    assert source.topics == ["a", "b"]
    assert source.timestamp_extractor is extractor
    assert source.offset_reset == AutoOffsetReset.latest()
    assert source.key_deserializer is not None and source.value_deserializer is not None
    assert source.value_deserializer.deserialize("a", b"\x00" * 7 + b"\x05") == 5


def test_sinks_inherit_serdes_until_an_operation_drops_them() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in", Consumed(Serdes.String(), Serdes.Long()))
    stream.to("same")
    stream.filter(lambda k, v: True).to("filtered")
    stream.map_values(str).to("value-changed")
    stream.select_key(lambda k, v: v).to("key-changed")
    stream.to("explicit", Produced(value_serde=Serdes.String()))
    topology = builder.build()
    sinks = {spec.topic: spec for spec in topology.nodes.values() if isinstance(spec, SinkSpec)}
    assert sinks["same"].key_serializer is not None and sinks["same"].value_serializer is not None
    assert sinks["filtered"].value_serializer is not None
    assert sinks["value-changed"].key_serializer is not None and sinks["value-changed"].value_serializer is None
    assert sinks["key-changed"].key_serializer is None and sinks["key-changed"].value_serializer is not None
    assert sinks["explicit"].value_serializer.serialize("explicit", "x") == b"x"  # type: ignore[union-attr]


def test_produced_partitioner_and_name_reach_the_sink() -> None:
    def partitioner(topic: str, key: object, value: object, n: int) -> int:
        return 0

    builder = StreamsBuilder()
    builder.stream("in").to("out", Produced(partitioner=partitioner, name="writer"))
    assert _sink(builder.build(), "writer").partitioner is partitioner


def test_aggregation_stores_follow_materialized() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", Consumed(Serdes.String(), Serdes.String())).group_by_key()
    grouped.count(Materialized("default-store"))
    grouped.count(Materialized("plain", logging=False, caching=False, store_type="in_memory",
                               value_serde=Serdes.Integer()))
    grouped.reduce(lambda a, b: a + b, Materialized(Stores.in_memory_key_value_store("supplied")))
    grouped.aggregate(lambda: 0, lambda k, v, agg: agg + 1, Materialized("agg", log_config={"retention.ms": 5}))
    topology = builder.build()

    default = _store(topology, "default-store")
    assert (default.logging_enabled, default.caching_enabled, default.persistent) == (True, True, True)
    assert isinstance(default.key_serde, StringSerde)  # from the grouping (the stream's Consumed)
    assert isinstance(default.value_serde, LongSerde)  # count() counts in Longs
    plain = _store(topology, "plain")
    assert (plain.logging_enabled, plain.caching_enabled, plain.persistent) == (False, False, False)
    assert plain.value_serde is not None and plain.value_serde.name == "Integer"
    supplied = _store(topology, "supplied")
    assert supplied.persistent is False
    assert isinstance(supplied.value_serde, StringSerde)  # reduce keeps the grouped value serde
    agg = _store(topology, "agg")
    assert agg.value_serde is None  # aggregate(): the configured default unless Materialized says
    assert agg.logging_config["retention.ms"] == "5"


def test_named_repartition_is_sized_by_repartitioned() -> None:
    builder = StreamsBuilder()
    builder.stream("in").repartition(Repartitioned(name="spread", num_partitions=3)).to("out")
    topology = builder.build()
    assert topology.internal_topics["spread-repartition"].num_partitions == 3


def test_grouped_serdes_reach_the_repartition_topic() -> None:
    builder = StreamsBuilder()
    (builder.stream("in").group_by(lambda k, v: v, Grouped(Serdes.String(), Serdes.Long(), name="g"))
     .count())
    topology = builder.build()
    sink = _sink(topology, "g-repartition-sink")
    assert sink.key_serializer is not None and sink.value_serializer is not None
    assert sink.value_serializer.serialize("t", 1) == b"\x00" * 7 + b"\x01"
    assert _source(topology, "g-repartition-source").value_deserializer is not None


def test_table_keeps_a_store_only_when_named_or_needed() -> None:
    builder = StreamsBuilder()
    plain = builder.table("plain")
    named = builder.table("named", materialized=Materialized("named-store"))
    plain.to_stream().to("out-1")
    named.filter(lambda k, v: True).to_stream().to("out-2")
    topology = builder.build()
    assert list(topology.store_builders) == ["named-store"]
    assert isinstance(named, KTable) and named.queryable_store_name == "named-store"
    assert plain.queryable_store_name is None


def test_old_values_are_requested_from_parents_that_can_send_them() -> None:
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().count()
    assert counts.filter(lambda k, v: True)._enable_sending_old_values(False)
    plain = builder.table("plain")
    assert not plain._enable_sending_old_values(False)
    assert plain._enable_sending_old_values(True)  # forcing materializes the source table
    topology = builder.build()
    assert "plain-STATE-STORE-0000000004" in topology.store_builders


def test_process_connects_the_named_stores() -> None:
    builder = StreamsBuilder()
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("s1")))
    builder.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("s2")))
    out = builder.stream("in").process(PassThrough, "s1", "s2", named="custom")
    assert isinstance(out, KStream) and out.repartition_required
    spec = builder.build().nodes["custom"]
    assert isinstance(spec, ProcessorSpec) and spec.stores == ["s1", "s2"]


def test_process_with_an_unknown_store_fails_at_build() -> None:
    builder = StreamsBuilder()
    builder.stream("in").process(PassThrough, "missing")
    with pytest.raises(TopologyError, match="missing"):
        builder.build()


def test_build_twice_gives_the_same_topology() -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by(lambda k, v: v).count().to_stream().to("out")
    assert str(builder.build().describe()) == str(builder.build().describe())


def test_group_by_key_without_key_change_adds_no_repartition() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in").map_values(str).group_by_key()
    assert isinstance(grouped, KGroupedStream) and not grouped.repartition_required
    grouped.count()
    assert builder.build().internal_topics == {}


@pytest.mark.parametrize("bad", ["", ".", "..", "has space", "x" * 250, "ünïcode"])
def test_illegal_names_are_rejected(bad: str) -> None:
    with pytest.raises(TopologyError):
        Named(bad)
    with pytest.raises(TopologyError):
        StreamsBuilder().stream("in").filter(lambda k, v: True, named=bad)
    with pytest.raises(TopologyError):
        Materialized(bad)


def test_wrong_arguments_fail_early() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in")
    with pytest.raises(TypeError):
        stream.filter("not callable")  # type: ignore[arg-type]
    with pytest.raises(TopologyError):
        stream.merge(StreamsBuilder().stream("other"))
    with pytest.raises(TopologyError):
        builder.stream([])
    with pytest.raises(TopologyError):
        Materialized("m", store_type="rocks-in-the-cloud")
    with pytest.raises(TopologyError):
        Repartitioned(num_partitions=0)
    with pytest.raises(TopologyError):
        Consumed(offset_reset="sometimes")
    with pytest.raises(TopologyError, match="supplier"):
        stream.process(PassThrough())


def test_reading_a_topic_twice_is_a_topology_error() -> None:
    builder = StreamsBuilder()
    builder.stream("in").to("a")
    builder.stream("in").to("b")
    with pytest.raises(TopologyError, match="in"):
        builder.build()


def test_table_topic_and_store_share_serdes_consumed_first() -> None:
    builder = StreamsBuilder()
    builder.table("t1", Consumed(Serdes.String(), Serdes.Long()), Materialized("s1", value_serde=Serdes.Integer()))
    builder.table("t2", materialized=Materialized("s2", Serdes.String(), Serdes.Double()))
    topology = builder.build()
    s1, s2 = _store(topology, "s1"), _store(topology, "s2")
    assert isinstance(s1.value_serde, LongSerde)
    assert s2.value_serde is not None and s2.value_serde.name == "Double"
    source = _source(topology, "KSTREAM-SOURCE-0000000000")
    assert source.value_deserializer is not None
    assert source.value_deserializer.deserialize("t1", b"\x00" * 7 + b"\x02") == 2
