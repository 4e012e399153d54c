"""streamlet twins of the Kafka Streams topologies in java/.../Apps.java, for `streamlet run`.

Each must describe() exactly as its Java twin (same node, store and internal topic names), or the
state written by one could not be found by the other. Topic names come from the environment
(`INTEROP_TOPICS`, a JSON object: role -> topic), so each test gets topics of its own.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import ClassVar

from streamlet import (
    Consumed,
    EmitStrategy,
    Grouped,
    JoinWindows,
    Materialized,
    Produced,
    Serdes,
    SessionWindows,
    StreamJoined,
    StreamsBuilder,
    TableJoined,
    TimeWindows,
    Topology,
)
from streamlet.schema_registry import SpecificAvroSerde
from streamlet.windowed import Windowed

S = Serdes.String()
TOPICS_ENV = "INTEROP_TOPICS"
OPERATOR_ROLES = ("win-in", "win-out", "sess-in", "sess-out", "join-left", "join-right", "join-out",
                  "fk-orders", "fk-products", "fk-out")


def _topics() -> dict[str, str]:
    return dict(json.loads(os.environ[TOPICS_ENV]))


def window_key(key: Windowed, count: int | None) -> tuple[str, str | None]:
    return f"{key.key}@{key.window.start}-{key.window.end}", None if count is None else str(count)


def click_view(click: str, view: str) -> str:
    return f"{click}+{view}"


def product_of(order: str) -> str:
    return order.split(":")[0]


def order_product(order: str, product: str) -> str:
    return f"{order}/{product}"


def operators() -> Topology:
    """Apps.operators: an emit-final tumbling-window count, a session-window count, a stream-stream
    inner join and a foreign-key table join, each in sub-topologies of its own."""
    t = _topics()
    builder = StreamsBuilder()
    (builder.stream(t["win-in"], Consumed(S, S))
     .group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=10), timedelta(seconds=1)))
     .emit_strategy(EmitStrategy.on_window_close())
     .count(Materialized("window-counts", retention=timedelta(minutes=30)))
     .to_stream()
     .map(window_key)
     .to(t["win-out"], Produced(S, S)))

    (builder.stream(t["sess-in"], Consumed(S, S))
     .group_by_key()
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=5), timedelta(seconds=1)))
     .count(Materialized("session-counts"))
     .to_stream()
     .map(window_key)
     .to(t["sess-out"], Produced(S, S)))

    clicks = builder.stream(t["join-left"], Consumed(S, S))
    views = builder.stream(t["join-right"], Consumed(S, S))
    (clicks.join(views, click_view,
                 JoinWindows.of_time_difference_and_grace(timedelta(seconds=5), timedelta(minutes=30)),
                 StreamJoined(S, S, S, store_name="clicks-views"))
     .to(t["join-out"], Produced(S, S)))

    orders = builder.table(t["fk-orders"], Consumed(S, S), Materialized("orders-store"))
    products = builder.table(t["fk-products"], Consumed(S, S), Materialized("products-store"))
    (orders.join(products, product_of, order_product, TableJoined(name="order-product"),
                 Materialized("order-product-store"))
     .to_stream()
     .to(t["fk-out"], Produced(S, S)))
    return builder.build()


AVRO_ROLES = ("orders", "totals")


@dataclass
class Order:
    """An order, the input's Avro value (AvroApps.ORDER: the same schema text, so the same registered schema)."""

    avro_schema: ClassVar[str] = (
        '{"type":"record","name":"Order","namespace":"io.streamlet.interop","fields":['
        '{"name":"id","type":"string"},{"name":"customer","type":"string"},'
        '{"name":"amount","type":"double"},{"name":"items","type":"int"}]}')
    id: str
    customer: str
    amount: float
    items: int


@dataclass
class CustomerTotals:
    """A customer's aggregate, the store's and the output's Avro value (AvroApps.TOTALS)."""

    avro_schema: ClassVar[str] = (
        '{"type":"record","name":"CustomerTotals","namespace":"io.streamlet.interop","fields":['
        '{"name":"count","type":"long"},{"name":"total","type":"double"},'
        '{"name":"last_order_id","type":"string"}]}')
    count: int
    total: float
    last_order_id: str


def customer_of(_key: str, order: Order) -> str:
    return order.customer


def add_order(_customer: str, order: Order, totals: CustomerTotals) -> CustomerTotals:
    return CustomerTotals(totals.count + 1, totals.total + order.amount, order.id)


def customer_totals() -> Topology:
    """AvroApps.customerTotals: Avro orders grouped by customer (repartition topic `orders-by-customer`) and
    aggregated into an Avro CustomerTotals in the store `customer-totals`; the serdes are configured from the
    application's `schema.registry.url`."""
    t = _topics()
    builder = StreamsBuilder()
    (builder.stream(t["orders"], Consumed(S, SpecificAvroSerde(Order)))
     .group_by(customer_of, Grouped(S, SpecificAvroSerde(Order), name="orders-by-customer"))
     .aggregate(lambda: CustomerTotals(0, 0.0, ""), add_order,
                Materialized("customer-totals", key_serde=S, value_serde=SpecificAvroSerde(CustomerTotals)))
     .to_stream()
     .to(t["totals"], Produced(S, SpecificAvroSerde(CustomerTotals))))
    return builder.build()
