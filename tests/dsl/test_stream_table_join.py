"""KStream-KTable joins through the TopologyTestDriver: inner and left joins, table updates and
tombstones, null keys and values, repartitioning after a key change, and the topology they build."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import Consumed, Joined, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows
from streamlet.errors import TopologyError
from streamlet.record import KeyValue
from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology

CONFIG = {"default.key.serde": "String", "default.value.serde": "String", "statestore.cache.max.bytes": 0}


def enrich(event: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
    return {**event, "region": None if user is None else user["region"]}


def join_topology(left: bool, store_name: str | None = "users") -> Topology:
    builder = StreamsBuilder()
    users = builder.table("users", Consumed(Serdes.String(), Serdes.Json()),
                          None if store_name is None else Materialized(store_name))
    events = builder.stream("events", Consumed(Serdes.String(), Serdes.Json()))
    joined = events.left_join(users, enrich) if left else events.join(users, enrich)
    joined.to("out", Produced(Serdes.String(), Serdes.Json()))
    return builder.build()


def drive(topology: Topology, steps: list[tuple[str, str | None, Any, int]]) -> list[tuple[Any, Any, int]]:
    with TopologyTestDriver(topology, CONFIG) as driver:
        topics = {name: driver.create_input_topic(name, Serdes.String(), Serdes.Json()) for name in ("users", "events")}
        for topic, key, value, ts in steps:
            topics[topic].pipe_input(key, value, ts)
        out = driver.create_output_topic("out", Serdes.String(), Serdes.Json())
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


STEPS: list[tuple[str, str | None, Any, int]] = [
    ("events", "u1", {"id": 1}, 10),                 # no user yet
    ("users", "u1", {"region": "eu"}, 11),
    ("events", "u1", {"id": 2}, 12),
    ("users", "u1", {"region": "us"}, 13),           # an update: later events see it
    ("events", "u1", {"id": 3}, 14),
    ("events", None, {"id": 4}, 15),                 # null key
    ("events", "u1", None, 16),                      # null value: always dropped
    ("users", "u1", None, 17),                       # tombstone: the user is gone
    ("events", "u1", {"id": 5}, 18),
    ("events", "u2", {"id": 6}, 5),                  # the output keeps the stream record's timestamp
]


def test_inner_join_forwards_only_records_with_a_table_row() -> None:
    assert drive(join_topology(left=False), STEPS) == [
        ("u1", {"id": 2, "region": "eu"}, 12),
        ("u1", {"id": 3, "region": "us"}, 14),
    ]


def test_left_join_forwards_every_record_with_none_for_a_missing_row() -> None:
    assert drive(join_topology(left=True), STEPS) == [
        ("u1", {"id": 1, "region": None}, 10),
        ("u1", {"id": 2, "region": "eu"}, 12),
        ("u1", {"id": 3, "region": "us"}, 14),
        (None, {"id": 4, "region": None}, 15),   # Kafka Streams 3.7+: a left join keeps null keys
        ("u1", {"id": 5, "region": None}, 18),
        ("u2", {"id": 6, "region": None}, 5),
    ]


def test_an_unnamed_table_is_materialized_for_the_join() -> None:
    topology = join_topology(left=False, store_name=None)
    description = str(topology.describe())
    assert "Processor: KSTREAM-JOIN-0000000004 (stores: [users-STATE-STORE-0000000000])" in description
    assert len(topology.sub_topologies()) == 1  # both sources in one task
    assert drive(topology, STEPS)[0] == ("u1", {"id": 2, "region": "eu"}, 12)


def test_join_after_a_key_change_goes_through_a_repartition_topic() -> None:
    builder = StreamsBuilder()
    users = builder.table("users", Consumed(Serdes.String(), Serdes.Json()), Materialized("users"))
    (builder.stream("events", Consumed(Serdes.String(), Serdes.Json()))
     .select_key(lambda k, v: v["user"])
     .join(users, enrich, Joined(name="by-user"))
     .to("out", Produced(Serdes.String(), Serdes.Json())))
    topology = builder.build()
    assert "by-user-repartition" in topology.internal_topics
    assert [n for n in topology.nodes if n.startswith("by-user")] == [
        "by-user-repartition-filter", "by-user-repartition-sink", "by-user-repartition-source", "by-user"]
    out = drive(topology, [("users", "u7", {"region": "apac"}, 1), ("events", "x", {"id": 1, "user": "u7"}, 2)])
    assert out == [("u7", {"id": 1, "user": "u7", "region": "apac"}, 2)]


def test_joining_the_same_stream_twice_after_a_key_change_shares_the_repartition() -> None:
    builder = StreamsBuilder()
    table = builder.table("users")
    keyed = builder.stream("events").select_key(lambda k, v: v)
    keyed.join(table, lambda a, b: a + b).to("out")
    keyed.left_join(table, lambda a, b: a).to("out2")
    assert list(builder.build().internal_topics) == ["KSTREAM-KEY-SELECT-0000000004-repartition"]


def test_a_derived_table_without_a_store_is_joined_through_its_parent() -> None:
    """As Kafka Streams' value getters: the source table is materialized, and the filter and mapper
    are applied to the row read from it (the join processor is connected to the source's store)."""
    builder = StreamsBuilder()
    table = (builder.table("users", Consumed(Serdes.String(), Serdes.String()))
             .filter(lambda k, v: v != "hidden").map_values(lambda v: v.upper()))
    (builder.stream("events", Consumed(Serdes.String(), Serdes.String()))
     .left_join(table, lambda e, u: f"{e}:{u}").to("out", Produced(Serdes.String(), Serdes.String())))
    topology = builder.build()
    assert "Processor: KSTREAM-LEFTJOIN-0000000006 (stores: [users-STATE-STORE-0000000000])" in str(topology.describe())
    with TopologyTestDriver(topology, CONFIG) as driver:
        users = driver.create_input_topic("users", Serdes.String(), Serdes.String())
        events = driver.create_input_topic("events", Serdes.String(), Serdes.String())
        users.pipe_input("a", "ann", 1)
        users.pipe_input("b", "hidden", 2)
        events.pipe_input("a", "e1", 3)
        events.pipe_input("b", "e2", 4)
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        assert out.read_key_values_to_list() == [KeyValue("a", "e1:ANN"), KeyValue("b", "e2:None")]


def test_an_aggregated_table_can_be_joined() -> None:
    builder = StreamsBuilder()
    totals = builder.stream("payments", Consumed(Serdes.String(), Serdes.String())).group_by_key().count()
    (builder.stream("events", Consumed(Serdes.String(), Serdes.String()))
     .join(totals, lambda e, n: f"{e}:{n}").to("out", Produced(Serdes.String(), Serdes.String())))
    with TopologyTestDriver(builder.build(), CONFIG) as driver:
        payments = driver.create_input_topic("payments", Serdes.String(), Serdes.String())
        events = driver.create_input_topic("events", Serdes.String(), Serdes.String())
        payments.pipe_input("k", "p", 1)
        payments.pipe_input("k", "p", 2)
        events.pipe_input("k", "e", 3)
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        assert out.read_key_values_to_list() == [KeyValue("k", "e:2")]


def test_a_windowed_table_cannot_be_joined() -> None:
    builder = StreamsBuilder()
    windowed = builder.stream("a").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count()
    with pytest.raises(TopologyError, match="Windowed"):
        builder.stream("b").join(windowed, lambda a, b: a)


def test_to_table_reads_a_stream_as_a_changelog() -> None:
    builder = StreamsBuilder()
    table = builder.stream("events", Consumed(Serdes.String(), Serdes.String())).to_table(Materialized("latest"))
    table.to_stream().to("out", Produced(Serdes.String(), Serdes.String()))
    topology = builder.build()
    assert "Processor: KSTREAM-TOTABLE-0000000001 (stores: [latest])" in str(topology.describe())
    with TopologyTestDriver(topology, CONFIG) as driver:
        events = driver.create_input_topic("events", Serdes.String(), Serdes.String())
        events.pipe_input("k", "a", 1)
        events.pipe_input(None, "dropped", 2)
        events.pipe_input("k", None, 3)
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        assert out.read_key_values_to_list() == [KeyValue("k", "a"), KeyValue("k", None)]
        assert driver.get_key_value_store("latest").get("k") is None
