"""Versioned tables in the DSL (issue 26, Kafka Streams' KIP-914), through the TopologyTestDriver.

A table materialized in a versioned store keeps every version of a key within its history retention; a
stream joined with it meets each key's row as of the stream record's own time. Out-of-order table
updates are stored as older versions and still forwarded (marked not latest), updates older than the
grace period go nowhere; downstream table-table joins and groupings drop out-of-order updates. The
differential suite (tests/fidelity/test_versioned_differential.py) compares all this with Kafka Streams
record for record; these tests pin the rules down readably.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from streamlet import (
    BufferConfig,
    Consumed,
    Materialized,
    Processor,
    Produced,
    Record,
    Serdes,
    Stores,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    VersionedKeyValueStore,
    VersionedRecord,
)
from streamlet.errors import TopologyError
from streamlet.kafka.topic_manager import plan_internal_topics
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology

CONFIG = {"default.key.serde": "String", "default.value.serde": "String", "statestore.cache.max.bytes": 0}
S = Serdes.String()


def versioned(name: str = "versions", history: int = 100) -> Materialized:
    return Materialized.as_(Stores.persistent_versioned_key_value_store(name, history))


def run(topology: Topology, steps: Sequence[tuple[str, str | None, str | None, int]],
        outputs: tuple[str, ...] = ("out",)) -> dict[str, list[tuple[Any, Any, int]]]:
    with TopologyTestDriver(topology, CONFIG) as driver:
        topics: dict[str, Any] = {}
        for topic, key, value, ts in steps:
            if topic not in topics:
                topics[topic] = driver.create_input_topic(topic, S, S)
            topics[topic].pipe_input(key, value, ts)
        return {name: [(r.key, r.value, r.timestamp)
                       for r in driver.create_output_topic(name, S, S).read_records_to_list()]
                for name in outputs}


def join_topology(materialized: Materialized | None, left: bool = False) -> Topology:
    builder = StreamsBuilder()
    table = builder.table("tbl", Consumed(S, S), materialized)
    stream = builder.stream("in", Consumed(S, S))
    joined = stream.left_join(table, lambda v, t: f"{v}+{t}") if left else stream.join(table, lambda v, t: f"{v}+{t}")
    joined.to("out", Produced(S, S))
    table.to_stream().to("changes", Produced(S, S))
    return builder.build()


TABLE_OUT_OF_ORDER = [("tbl", "k", "v10", 10), ("tbl", "k", "v30", 30), ("tbl", "k", "v20", 20)]


def test_a_stream_record_meets_the_versioned_table_as_of_its_time() -> None:
    steps = [*TABLE_OUT_OF_ORDER, *(("in", "k", f"s{t}", t) for t in (35, 5, 25, 15, 20, 30))]
    assert run(join_topology(versioned()), steps)["out"] == [
        ("k", "s35+v30", 35), ("k", "s25+v20", 25), ("k", "s15+v10", 15), ("k", "s20+v20", 20),
        ("k", "s30+v30", 30)]
    # the same records against a plain table all meet its latest row (v20: the last one written)
    assert [v for _k, v, _t in run(join_topology(Materialized("plain")), steps)["out"]] == [
        "s35+v20", "s5+v20", "s25+v20", "s15+v20", "s20+v20", "s30+v20"]


def test_a_deletion_is_a_version_too() -> None:
    steps = [("tbl", "k", "v10", 10), ("tbl", "k", None, 20), ("tbl", "k", "v30", 30),
             *(("in", "k", f"s{t}", t) for t in (15, 25, 35))]
    assert run(join_topology(versioned(), left=True), steps)["out"] == [
        ("k", "s15+v10", 15), ("k", "s25+None", 25), ("k", "s35+v30", 35)]


def test_out_of_order_updates_go_downstream_and_late_ones_do_not() -> None:
    """Kafka Streams' KTableSource over a versioned store: an update stored as an older version is still
    forwarded; one older than the grace period (= history retention) is neither stored nor forwarded."""
    steps = [("tbl", "k", "v50", 50), ("tbl", "k", "v45", 45), ("tbl", "k", "v10", 10), ("in", "k", "s12", 12)]
    result = run(join_topology(versioned(history=20), left=True), steps, ("out", "changes"))
    assert result["changes"] == [("k", "v50", 50), ("k", "v45", 45)]
    assert result["out"] == [("k", "s12+None", 12)]  # as of 12 is past the history: no row


def test_to_table_and_table_operations_keep_versions() -> None:
    builder = StreamsBuilder()
    table = builder.stream("tbl", Consumed(S, S)).to_table(versioned("from-stream"))
    mapped = table.map_values(lambda v: v.upper())  # no store: read through the versioned table
    filtered = table.filter(lambda k, v: v.endswith("1"), versioned("filtered"))
    stream = builder.stream("in", Consumed(S, S))
    stream.left_join(mapped, lambda v, t: f"{v}+{t}").to("out", Produced(S, S))
    stream.left_join(filtered, lambda v, t: f"{v}+{t}").to("out2", Produced(S, S))
    steps = [("tbl", "k", "a1", 10), ("tbl", "k", "b2", 20), ("in", "k", "s15", 15), ("in", "k", "s25", 25)]
    result = run(builder.build(), steps, ("out", "out2"))
    assert result["out"] == [("k", "s15+A1", 15), ("k", "s25+B2", 25)]
    assert result["out2"] == [("k", "s15+a1", 15), ("k", "s25+None", 25)]


def test_table_joins_and_groupings_drop_out_of_order_updates() -> None:
    builder = StreamsBuilder()
    left = builder.table("tbl", Consumed(S, S), versioned())
    right = builder.table("tbl2", Consumed(S, S), Materialized("right"))
    left.join(right, lambda a, b: f"{a}&{b}").to_stream().to("out", Produced(S, S))
    left.group_by(lambda k, v: (v[0], v)).count().to_stream().to("counts", Produced(S, Serdes.Long()))
    steps = [("tbl2", "k", "r", 1), ("tbl", "k", "x30", 30), ("tbl", "k", "y20", 20), ("tbl", "k", "z40", 40)]
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        inputs = {t: driver.create_input_topic(t, S, S) for t in ("tbl", "tbl2")}
        for topic, key, value, ts in steps:
            inputs[topic].pipe_input(key, value, ts)
        joined = [(r.key, r.value) for r in driver.create_output_topic("out", S, S).read_records_to_list()]
        counts = [(r.key, r.value) for r in
                  driver.create_output_topic("counts", S, Serdes.Long()).read_records_to_list()]
    assert joined == [("k", "x30&r"), ("k", "z40&r")]  # y20 arrived out of order: no join result
    assert counts == [("x", 1), ("x", 0), ("z", 1)]


def test_a_filter_over_a_versioned_table_forwards_every_update() -> None:
    """Kafka Streams' versioned semantics: a filter does not drop an update filtered out both before and
    after (a plain table's filter does, once it knows the old value)."""
    def topology(materialized: Materialized) -> Topology:
        builder = StreamsBuilder()
        table = builder.table("tbl", Consumed(S, S), materialized)
        table.filter(lambda k, v: v.startswith("keep")).to_stream().to("out", Produced(S, S))
        return builder.build()

    steps = [("tbl", "k", "drop1", 1), ("tbl", "k", "drop2", 2)]
    assert run(topology(versioned()), steps)["out"] == [("k", None, 1), ("k", None, 2)]
    assert run(topology(Materialized("plain")), steps)["out"] == []


def test_a_table_operation_given_a_materialized_is_not_versioned_without_a_versioned_store() -> None:
    """Kafka Streams sets a filter's (or mapping's) output versioned or not whenever it is given a
    `Materialized`, named or not: a `Materialized` without a store name and without a versioned supplier
    keeps no store, yet the table it makes is not versioned, so what reads it uses plain-table rules."""
    def topology(materialized: Materialized | None) -> Topology:
        builder = StreamsBuilder()
        table = builder.table("tbl", Consumed(S, S), versioned(history=0))
        first = table.filter(lambda k, v: len(v) % 2 == 0, materialized)
        first.filter(lambda k, v: len(v) % 2 == 0, Materialized("second")).to_stream().to("out", Produced(S, S))
        return builder.build()

    steps = [("tbl", "a", None, 0), ("tbl", "a", "1", 1)]
    # plain-table rules below the first filter: nothing seen before and after, nothing forwarded
    assert run(topology(Materialized(logging=False)), steps)["out"] == []
    # without a Materialized the first filter is as versioned as its parent: every update goes on
    assert run(topology(None), steps)["out"] == [("a", None, 0), ("a", None, 1)]


def test_a_foreign_key_join_over_an_unversioned_filter_follows_an_out_of_order_update() -> None:
    """The subscription side of a foreign-key join drops out-of-order updates only of a versioned left
    table; behind a filter given a (nameless, plain) `Materialized` the left table is not versioned, so an
    out-of-order update moves the row's subscription (checked against Kafka Streams 4.4.0)."""
    def topology(materialized: Materialized | None) -> Topology:
        builder = StreamsBuilder()
        left = builder.table("tbl", Consumed(S, S), versioned(history=3))
        right = builder.table("tbl2", Consumed(S, S))
        filtered = left.filter(lambda k, v: k < "c", materialized)
        filtered.join(right, lambda v: v[0], lambda a, b: f"{a}&{b}").to_stream().to("out", Produced(S, S))
        return builder.build()

    # b subscribes to "1"; the out-of-order "0x" moves it to "0" unless the left table is versioned
    steps = [("tbl2", "1", "R1", 0), ("tbl", "b", "1x", 5), ("tbl", "b", "0x", 3), ("tbl2", "1", "R2", 6)]
    assert run(topology(Materialized(logging=False)), steps)["out"] == [("b", "1x&R1", 5)]
    assert run(topology(None), steps)["out"] == [("b", "1x&R1", 5), ("b", "1x&R2", 6)]


def test_the_processor_api_sees_a_versioned_store() -> None:
    class Recorder(Processor):
        def init(self, context: Any) -> None:
            super().init(context)
            self.store: VersionedKeyValueStore = context.get_state_store("history")

        def process(self, record: Record) -> None:
            code = self.store.put(record.key, record.value, record.timestamp)
            self.context.forward(record.with_value(f"{code}:{self.store.get(record.key, 15)}"))

    topology = Topology()
    topology.add_source("src", "in", key_deserializer=S.deserializer, value_deserializer=S.deserializer)
    topology.add_processor("rec", Recorder, "src")
    topology.add_state_store(Stores.versioned_key_value_store_builder(
        Stores.in_memory_versioned_key_value_store("history", 100), S, S), "rec")
    topology.add_sink("out", "out", "rec", key_serializer=S.serializer, value_serializer=S.serializer)
    with TopologyTestDriver(topology, CONFIG) as driver:
        inp = driver.create_input_topic("in", S, S)
        for value, ts in (("a", 10), ("c", 30), ("b", 20)):
            inp.pipe_input("k", value, ts)
        out = [r.value for r in driver.create_output_topic("out", S, S).read_records_to_list()]
        store = driver.get_versioned_key_value_store("history")
        assert store.get("k", 25) == VersionedRecord("b", 20)
        assert store.get("k") == VersionedRecord("c", 30)
    assert out == ["-1:VersionedRecord(value='a', timestamp=10, valid_to=None)",
                   "-1:VersionedRecord(value='a', timestamp=10, valid_to=None)",
                   "30:VersionedRecord(value='a', timestamp=10, valid_to=None)"]


def test_operations_that_cannot_be_versioned_say_so() -> None:
    builder = StreamsBuilder()
    table = builder.table("tbl", Consumed(S, S), versioned())
    with pytest.raises(TopologyError, match="suppress.. is only supported for non-versioned KTables"):
        table.map_values(str.upper).suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded()))
    with pytest.raises(TopologyError, match="GlobalTables cannot be versioned"):
        builder.global_table("glb", Consumed(S, S), versioned("g"))
    with pytest.raises(TopologyError, match="needs a window store supplier"):
        builder.stream("in", Consumed(S, S)).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
            versioned("windowed"))
        builder.build()


def test_an_aggregation_into_a_versioned_store_keeps_each_aggregate_as_a_version() -> None:
    """Kafka Streams' KStreamAggregate over a versioned store: each aggregate is put at the largest
    timestamp folded into it; a stream joined with the result meets the aggregate as of its time."""
    builder = StreamsBuilder()
    counts = builder.stream("tbl", Consumed(S, S)).group_by_key().count(versioned("counts"))
    builder.stream("in", Consumed(S, S)).join(counts, lambda v, n: f"{v}:{n}").to("out", Produced(S, S))
    steps = [("tbl", "k", "x", 10), ("tbl", "k", "x", 20), ("tbl", "k", "x", 15), ("tbl", "k", "x", 30),
             *(("in", "k", f"s{t}", t) for t in (12, 25, 35))]
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        for topic, key, value, ts in steps:
            driver.create_input_topic(topic, S, S).pipe_input(key, value, ts)
        out = [r.value for r in driver.create_output_topic("out", S, S).read_records_to_list()]
        store = driver.get_versioned_key_value_store("counts")
        assert store.get("k", 22) == VersionedRecord(3, 20)  # the out-of-order record counted at 20
    assert out == ["s12:1", "s25:3", "s35:4"]


def test_caching_is_ignored_and_the_changelog_compacts_after_the_history() -> None:
    builder = StreamsBuilder()
    builder.table("tbl", Consumed(S, S), Materialized.as_(
        Stores.persistent_versioned_key_value_store("versions", 60_000), caching=True, log_config={"x": "1"}))
    topology = builder.build()
    store_builder = topology.store_builders["versions"]
    assert not store_builder.caching_enabled
    plan = plan_internal_topics(topology, "app", {"tbl": 2})
    config = plan.internal_topics["app-versions-changelog"].config
    assert config["cleanup.policy"] == "compact"
    assert config["min.compaction.lag.ms"] == str(60_000 + 86_400_000)
    assert config["x"] == "1"
