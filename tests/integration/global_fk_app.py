"""A KStream-GlobalKTable join and a foreign-key table join, topic names from the environment.

Orders (key: order id, value: "<customer>:<item>") join customers; the foreign key of an order is the
part before the colon. The same topologies run in the integration tests in-process and as `streamlet
run` apps (kill -9 under exactly-once).
"""

from __future__ import annotations

import os

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology

S = Serdes.String()


def customer_of(order: str) -> str | None:
    """The foreign key of an order value: the customer before the colon (None without one)."""
    customer, sep, _item = order.partition(":")
    return customer if sep else None


def join_values(order: str | None, customer: str | None) -> str:
    return f"{order}|{customer}"


def global_join_topology() -> Topology:
    builder = StreamsBuilder()
    customers = builder.global_table(os.environ["GJ_CUSTOMERS"], Consumed(S, S), Materialized("customers-global"))
    orders = builder.stream(os.environ["GJ_ORDERS"], Consumed(S, S))
    orders.left_join(customers, lambda _k, v: None if v is None else customer_of(v), join_values) \
        .to(os.environ["GJ_OUTPUT"], Produced(S, S))
    return builder.build()


def fk_join_topology() -> Topology:
    builder = StreamsBuilder()
    orders = builder.table(os.environ["FK_ORDERS"], Consumed(S, S))
    customers = builder.table(os.environ["FK_CUSTOMERS"], Consumed(S, S))
    orders.join(customers, customer_of, join_values).to_stream().to(os.environ["FK_OUTPUT"], Produced(S, S))
    return builder.build()
