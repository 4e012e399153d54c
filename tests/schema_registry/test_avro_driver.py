"""A topology with Avro values through `mock://` in the TopologyTestDriver: the serdes given in Consumed,
Produced and Materialized are configured with the application's `schema.registry.url`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder
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
