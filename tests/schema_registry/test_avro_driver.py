"""A topology with Avro values through `mock://` in the TopologyTestDriver: the serdes given in Consumed,
Produced and Materialized are configured with the application's `schema.registry.url`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from streamlet import (
    Consumed,
    Grouped,
    JoinWindows,
    Materialized,
    Produced,
    Serdes,
    StreamJoined,
    StreamsBuilder,
)
from streamlet.schema_registry import SpecificAvroSerde, drop_scope
from streamlet.testing import TopologyTestDriver


@dataclass
class Order:
    customer: str
    amount: float


@dataclass
class Total:
    orders: int
    amount: float


def totals_topology() -> object:
    builder = StreamsBuilder()
    (builder.stream("orders", Consumed(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Order)))
        .group_by_key()
        .aggregate(lambda: Total(0, 0.0),
                   lambda _key, order, total: Total(total.orders + 1, total.amount + order.amount),
                   Materialized("totals", key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Total)))
        .to_stream()
        .to("totals", Produced(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Total))))
    return builder.build()


def test_avro_values_through_the_driver() -> None:
    scope = f"driver-{uuid.uuid4().hex}"
    url = f"mock://{scope}"
    config = {"application.id": "avro-totals", "statestore.cache.max.bytes": 0, "schema.registry.url": url}
    try:
        with TopologyTestDriver(totals_topology(), config) as driver:
            orders = driver.create_input_topic("orders", Serdes.String(),
                                               SpecificAvroSerde(Order, config={"schema.registry.url": url}))
            totals = driver.create_output_topic("totals", Serdes.String(),
                                                SpecificAvroSerde(Total, config={"schema.registry.url": url}))
            orders.pipe_input("alice", Order("alice", 10.0))
            orders.pipe_input("bob", Order("bob", 1.5))
            orders.pipe_input("alice", Order("alice", 2.5))
            assert totals.read_key_values_to_list() == [
                ("alice", Total(1, 10.0)), ("bob", Total(1, 1.5)), ("alice", Total(2, 12.5))]
            assert driver.get_key_value_store("totals").get("alice") == Total(2, 12.5)
    finally:
        drop_scope(scope)


@dataclass
class Reading:
    value: int


def test_join_stores_repartition_and_global_tables_get_the_application_config() -> None:
    """Serdes given only to a StreamJoined (window stores), a Grouped (repartition topic), a global table and a
    table, each a fresh instance, are all configured from the application's config."""
    scope = f"driver-{uuid.uuid4().hex}"
    url = f"mock://{scope}"
    builder = StreamsBuilder()
    left = builder.stream("left", Consumed(key_serde=Serdes.String(), value_serde=Serdes.Bytes()))
    right = builder.stream("right", Consumed(key_serde=Serdes.String(), value_serde=Serdes.Bytes()))
    lookup = builder.global_table("lookup", Consumed(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Reading)))
    table = builder.table("table", Consumed(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Reading)))
    (left.map_values(lambda v: Reading(len(v)))
        .join(right.map_values(lambda v: Reading(10 * len(v))), lambda a, b: Reading(a.value + b.value),
              JoinWindows.of_time_difference_with_no_grace(1000),
              StreamJoined(Serdes.String(), SpecificAvroSerde(Reading), SpecificAvroSerde(Reading)))
        .join(lookup, lambda key, _value: key, lambda reading, extra: Reading(reading.value + extra.value))
        .join(table, lambda reading, extra: Reading(reading.value + extra.value))
        .group_by(lambda key, _value: f"{key}!", Grouped(Serdes.String(), SpecificAvroSerde(Reading)))
        .reduce(lambda a, b: Reading(a.value + b.value))
        .to_stream()
        .map_values(lambda reading: reading.value)
        .to("out", Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    try:
        with TopologyTestDriver(builder.build(), {"application.id": "joins", "schema.registry.url": url}) as driver:
            by_hand = SpecificAvroSerde(Reading, config={"schema.registry.url": url})
            driver.create_input_topic("lookup", Serdes.String(), by_hand).pipe_input("k", Reading(1000))
            driver.create_input_topic("table", Serdes.String(), by_hand).pipe_input("k", Reading(10000))
            driver.create_input_topic("left", Serdes.String(), Serdes.Bytes()).pipe_input("k", b"ab", 0)
            driver.create_input_topic("right", Serdes.String(), Serdes.Bytes()).pipe_input("k", b"abc", 1)
            out = driver.create_output_topic("out", Serdes.String(), Serdes.Long())
            assert out.read_key_values_to_list() == [("k!", 11032)]
    finally:
        drop_scope(scope)
