"""Protobuf and JSON Schema values through `mock://` in the TopologyTestDriver: serdes given in Consumed,
Produced, Grouped and Materialized are configured with the application's `schema.registry.url`, keys too."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder
from streamlet.schema_registry import KafkaJsonSchemaSerde, KafkaProtobufSerde, drop_scope
from streamlet.testing import TopologyTestDriver
from tests.helpers.protobuf_messages import Order, OrderKey

TOTAL = {"type": "object", "properties": {"orders": {"type": "integer"}, "amount": {"type": "number"}},
         "required": ["orders", "amount"]}


@pytest.fixture
def url() -> Iterator[str]:
    scope = f"driver-{uuid.uuid4().hex}"
    yield f"mock://{scope}"
    drop_scope(scope)


def test_protobuf_keys_and_values_and_a_json_schema_aggregate(url: str) -> None:
    builder = StreamsBuilder()
    (builder.stream("orders", Consumed(key_serde=KafkaProtobufSerde(OrderKey), value_serde=KafkaProtobufSerde(Order)))
        .group_by(lambda _key, order: order.ship_to.city,
                  Grouped(key_serde=Serdes.String(), value_serde=KafkaProtobufSerde(Order)))
        .aggregate(lambda: {"orders": 0, "amount": 0.0},
                   lambda _city, order, total: {"orders": total["orders"] + 1,
                                                "amount": total["amount"] + order.amount},
                   Materialized("totals", key_serde=Serdes.String(), value_serde=KafkaJsonSchemaSerde(TOTAL)))
        .to_stream()
        .to("totals", Produced(key_serde=Serdes.String(), value_serde=KafkaJsonSchemaSerde(TOTAL))))
    config = {"application.id": "formats-totals", "statestore.cache.max.bytes": 0, "schema.registry.url": url}
    with TopologyTestDriver(builder.build(), config) as driver:
        orders = driver.create_input_topic("orders", KafkaProtobufSerde(OrderKey, config={"schema.registry.url": url},
                                                                        is_key=True),
                                           KafkaProtobufSerde(Order, config={"schema.registry.url": url}))
        totals = driver.create_output_topic("totals", Serdes.String(),
                                            KafkaJsonSchemaSerde(config={"schema.registry.url": url}))
        for number, (city, amount) in enumerate([("Bern", 10.0), ("Basel", 1.5), ("Bern", 2.5)]):
            order = Order(id=f"o-{number}", amount=amount)
            order.ship_to.city = city
            orders.pipe_input(OrderKey(id=f"o-{number}"), order)
        assert totals.read_key_values_to_list() == [
            ("Bern", {"orders": 1, "amount": 10.0}), ("Basel", {"orders": 1, "amount": 1.5}),
            ("Bern", {"orders": 2, "amount": 12.5})]
        assert driver.get_key_value_store("totals").get("Bern") == {"orders": 2, "amount": 12.5}
