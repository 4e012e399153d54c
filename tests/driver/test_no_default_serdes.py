"""Topologies whose internal topics take their serdes from upstream run with no default serdes configured.

Kafka Streams infers the serdes of the topics and stores an operator creates from what came before it
(`Consumed`, `Grouped`, `Materialized`, `StreamJoined`, `Joined`, `Repartitioned`): the foreign-key
join's subscription topic is keyed by the foreign table's key serde and wraps the primary table's, its
response topic wraps the foreign table's value serde; a table grouping's repartition topic wraps the
`Grouped` value serde in its `Change` serde; and so on. Where nothing upstream names a serde, it needs
`default.key.serde` / `default.value.serde`, as streamlet does.

EXPECTED holds what Kafka Streams 3.9.1's own TopologyTestDriver gave for each topology, built the same
way in Java with no default serdes (a throwaway program; each "fails" entry is where Kafka Streams
threw its `ConfigException: Please specify a key/value serde...` as well).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from streamlet import (
    Consumed,
    Grouped,
    Joined,
    JoinWindows,
    KeyValue,
    Materialized,
    Produced,
    Repartitioned,
    Serdes,
    SessionWindows,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TableJoined,
    TimeWindows,
)
from streamlet.dsl.suppressed import BufferConfig
from streamlet.errors import ConfigError, StreamsError
from streamlet.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
C = Consumed(S, S)
INPUTS = ("customers", "table", "orders", "in", "in2")  # piped in this order, where the topology reads them


def _customer(order: str) -> str:
    return order.split(":")[0]


def _joined(a: Any, b: Any) -> str:
    return f"{a}|{b}"


def fk_inner(b: StreamsBuilder) -> None:
    orders, customers = b.table("orders", C), b.table("customers", C)
    orders.join(customers, _customer, _joined).to_stream().to("out", Produced(S, S))


def fk_left_named_materialized(b: StreamsBuilder) -> None:
    orders, customers = b.table("orders", C), b.table("customers", C)
    orders.left_join(customers, _customer, _joined, TableJoined(name="orders-customers"),
                     Materialized("fk-result", value_serde=S)).to_stream().to("out", Produced(S, S))


def fk_derived_tables(b: StreamsBuilder) -> None:
    orders = b.stream("orders", C).to_table()
    customers = b.table("customers", C).filter(lambda _k, _v: True)
    orders.join(customers, _customer, _joined).to_stream().to("out", Produced(S, S))


def fk_map_values_materialized(b: StreamsBuilder) -> None:
    orders = b.table("orders", C).map_values(lambda v: v, Materialized(value_serde=S))
    orders.join(b.table("customers", C), _customer, _joined).to_stream().to("out", Produced(S, S))


def table_group_by_count(b: StreamsBuilder) -> None:
    b.table("table", C).group_by(lambda k, v: (v, k), Grouped(S, S)).count().to_stream().to("out", Produced(S, L))


def table_group_by_reduce(b: StreamsBuilder) -> None:
    b.table("table", C).group_by(lambda k, v: (v, k), Grouped(S, S)) \
        .reduce(lambda a, x: a + x, lambda a, _x: a).to_stream().to("out", Produced(S, S))


def table_join_then_group_by(b: StreamsBuilder) -> None:
    joined = b.table("table", C).join(b.table("in2", C), lambda a, x: a + x, Materialized(value_serde=S))
    joined.group_by(lambda k, v: (v, k), Grouped(S, S)).count().to_stream().to("out", Produced(S, L))


def stream_group_by_aggregate(b: StreamsBuilder) -> None:
    b.stream("in", C).group_by(lambda _k, v: v, Grouped(S, S)) \
        .aggregate(lambda: 0, lambda _k, _v, a: a + 1, Materialized(value_serde=L)) \
        .to_stream().to("out", Produced(S, L))


def select_key_group_by_key(b: StreamsBuilder) -> None:
    b.stream("in", C).select_key(lambda _k, v: v).group_by_key(Grouped(S, S)).count() \
        .to_stream().to("out", Produced(S, L))


def windowed_group_by(b: StreamsBuilder) -> None:
    b.stream("in", C).group_by(lambda _k, v: v, Grouped(S, S)) \
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=100))).count() \
        .to_stream().map(lambda k, v: (k.key, v)).to("out", Produced(S, L))


def session_group_by(b: StreamsBuilder) -> None:
    b.stream("in", C).group_by(lambda _k, v: v, Grouped(S, S)) \
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(milliseconds=100))).count() \
        .to_stream().filter(lambda _k, v: v is not None).map(lambda k, v: (k.key, v)).to("out", Produced(S, L))


def sliding_group_by(b: StreamsBuilder) -> None:
    b.stream("in", C).group_by(lambda _k, v: v, Grouped(S, S)) \
        .windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(milliseconds=100))).count() \
        .to_stream().map(lambda k, v: (k.key, v)).to("out", Produced(S, L))


def stream_table_join_repartition(b: StreamsBuilder) -> None:
    table = b.table("table", C)
    b.stream("in", C).select_key(lambda _k, v: v).join(table, _joined, Joined(S, S, S)).to("out", Produced(S, S))


def stream_stream_join_repartition(b: StreamsBuilder) -> None:
    other = b.stream("in2", C).select_key(lambda _k, v: v)
    b.stream("in", C).select_key(lambda _k, v: v).join(
        other, _joined, JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=10)),
        StreamJoined(S, S, S)).to("out", Produced(S, S))


def cogroup_with_repartition(b: StreamsBuilder) -> None:
    first = b.stream("in", C).group_by_key()
    second = b.stream("in2", C).group_by(lambda _k, v: v, Grouped(S, S))
    first.cogroup(lambda _k, v, a: a + v).cogroup(second, lambda _k, v, a: a + v) \
        .aggregate(lambda: "", Materialized(key_serde=S, value_serde=S)).to_stream().to("out", Produced(S, S))


def suppress_count(b: StreamsBuilder) -> None:
    b.stream("in", C).group_by_key().count() \
        .suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded())).to_stream().to("out", Produced(S, L))


def suppress_filtered_table(b: StreamsBuilder) -> None:
    b.table("table", C).filter(lambda _k, _v: True) \
        .suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded())).to_stream().to("out", Produced(S, S))


def repartition_with_key_serde(b: StreamsBuilder) -> None:
    b.stream("in", C).select_key(lambda _k, v: v).repartition(Repartitioned(key_serde=S)).to("out", Produced(S, S))


def to_table_after_select_key(b: StreamsBuilder) -> None:
    b.stream("in", C).select_key(lambda _k, v: v).to_table(Materialized(key_serde=S, value_serde=S)) \
        .to_stream().to("out", Produced(S, S))


# -- where Kafka Streams needs a default serde too ---------------------------------------------------
def group_by_without_grouped(b: StreamsBuilder) -> None:
    b.stream("in", C).group_by(lambda _k, v: v).count().to_stream().to("out", Produced(S, L))


def table_group_by_key_serde_only(b: StreamsBuilder) -> None:
    b.table("table", C).group_by(lambda k, v: (v, k), Grouped(key_serde=S)).count() \
        .to_stream().to("out", Produced(S, L))


def select_key_group_by_key_without_grouped(b: StreamsBuilder) -> None:
    b.stream("in", C).select_key(lambda _k, v: v).group_by_key().count().to_stream().to("out", Produced(S, L))


def stream_table_join_repartition_without_joined(b: StreamsBuilder) -> None:
    table = b.table("table", C)
    b.stream("in", C).select_key(lambda _k, v: v).join(table, _joined).to("out", Produced(S, S))


def repartition_without_repartitioned(b: StreamsBuilder) -> None:
    b.stream("in", C).repartition().to("out", Produced(S, S))  # the topic's key serde: only repartition()'s


FK_TWICE = [("o1", "c1:x|c1"), ("o1", "c1:x|c1")]
EXPECTED: dict[Callable[[StreamsBuilder], None], list[tuple[str, Any]] | str] = {
    fk_inner: FK_TWICE,
    fk_left_named_materialized: FK_TWICE,
    fk_derived_tables: FK_TWICE,
    fk_map_values_materialized: FK_TWICE,
    table_group_by_count: [("c1", 1), ("c1", 1)],
    table_group_by_reduce: [("c1", "c1"), ("c1", "c1c1")],
    table_join_then_group_by: [("c1c1", 1), ("c1c1", 1)],
    stream_group_by_aggregate: [("c1", 1), ("c1", 2)],
    select_key_group_by_key: [("c1", 1), ("c1", 2)],
    windowed_group_by: [("c1", 1), ("c1", 2)],
    session_group_by: [("c1", 1), ("c1", 2)],
    sliding_group_by: [("c1", 1), ("c1", 1), ("c1", 2)],
    stream_table_join_repartition: [("c1", "c1|c1"), ("c1", "c1|c1")],
    stream_stream_join_repartition: [("c1", "c1|c1")] * 4,
    cogroup_with_repartition: [("c1", "c1"), ("c1", "c1c1"), ("c1", "c1c1c1"), ("c1", "c1c1c1c1")],
    suppress_count: [("c1", 2)],
    suppress_filtered_table: [("c1", "c1")],
    repartition_with_key_serde: [("c1", "c1"), ("c1", "c1")],
    to_table_after_select_key: [("c1", "c1"), ("c1", "c1")],
    group_by_without_grouped: "key",
    table_group_by_key_serde_only: "value",
    select_key_group_by_key_without_grouped: "key",
    stream_table_join_repartition_without_joined: "key",
    repartition_without_repartitioned: "key",
}
LONG_OUTPUT = {table_group_by_count, table_join_then_group_by, stream_group_by_aggregate, select_key_group_by_key,
               windowed_group_by, session_group_by, sliding_group_by, suppress_count, group_by_without_grouped,
               table_group_by_key_serde_only, select_key_group_by_key_without_grouped}


def _run(scenario: Callable[[StreamsBuilder], None]) -> list[tuple[str, Any]]:
    """Each input the topology reads gets the same two records (at 5 and 50 ms); the output as pairs."""
    builder = StreamsBuilder()
    scenario(builder)
    with TopologyTestDriver(builder.build(), {"application.id": "no-default-serdes"}) as driver:
        for topic in INPUTS:
            try:
                pipe = driver.create_input_topic(topic, S.serializer, S.serializer)
            except StreamsError as exc:
                assert "unknown topic" in str(exc)
                continue  # not read by this topology
            key, value = ("o1", "c1:x") if topic == "orders" else ("c1", "c1")
            pipe.pipe_input(key, value, 5)
            pipe.pipe_input(key, value, 50)
        out = driver.create_output_topic("out", S.deserializer, (L if scenario in LONG_OUTPUT else S).deserializer)
        return [(kv.key, kv.value) for kv in out.read_key_values_to_list()]


@pytest.mark.parametrize("scenario", [s for s, e in EXPECTED.items() if not isinstance(e, str)],
                         ids=lambda s: s.__name__)
def test_serdes_from_upstream_are_enough(scenario: Callable[[StreamsBuilder], None]) -> None:
    assert _run(scenario) == EXPECTED[scenario]


@pytest.mark.parametrize("scenario", [s for s, e in EXPECTED.items() if isinstance(e, str)], ids=lambda s: s.__name__)
def test_where_nothing_upstream_names_a_serde_the_default_is_needed(scenario: Callable[[StreamsBuilder], None]) -> None:
    which = EXPECTED[scenario]
    with pytest.raises(ConfigError, match=f"no {which} serde and default.{which}.serde is not configured: give "
                                          f"it a {which} serde .* or set default.{which}.serde"):
        _run(scenario)


def test_a_foreign_key_join_wraps_its_tables_serdes_in_its_internal_topics() -> None:
    """The subscription topic: the foreign table's key serde (Long here), the primary key in the wrapper
    written with the primary table's; the response topic: the primary key, the foreign value inside."""
    builder = StreamsBuilder()
    orders = builder.table("orders", C)
    customers = builder.table("customers", Consumed(L, S))
    orders.join(customers, lambda v: int(_customer(v)), _joined, TableJoined(name="oc")) \
        .to_stream().to("out", Produced(S, S))
    with TopologyTestDriver(builder.build(), {"application.id": "fk"}) as driver:
        driver.create_input_topic("customers", L.serializer, S.serializer).pipe_input(7, "Ann", 1)
        driver.create_input_topic("orders", S.serializer, S.serializer).pipe_input("o1", "7:book", 2)
        out = driver.create_output_topic("out", S.deserializer, S.deserializer)
        assert out.read_key_values_to_list() == [KeyValue("o1", "7:book|Ann")]
        (topic,) = [t for t in driver.produced_topic_names() if t.endswith("oc-subscription-registration-topic")]
        registrations = driver.create_output_topic(topic, L.deserializer, Serdes.Bytes().deserializer)
        (registration,) = registrations.read_key_values_to_list()
        assert registration.key == 7  # the foreign key, written with the customers' Long serde
        assert registration.value.endswith(b"o1" + bytes([0, 0, 0, 0]))  # the order id, then its partition
