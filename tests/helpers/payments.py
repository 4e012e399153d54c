"""The payments application the schema-registry broker tests run: Avro payments in, each account's balance (an
Avro record in a persistent store and in the output) out, through `SpecificAvroSerde`."""

from __future__ import annotations

from dataclasses import dataclass

from streamlet import Consumed, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.schema_registry import SpecificAvroSerde


@dataclass
class Payment:
    account: str
    amount: float


@dataclass
class Balance:
    payments: int
    total: float


def balances(inp: str, out: str) -> Topology:
    """Each account's payments counted and summed in the store `balances`, every update to `out`."""
    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Payment)))
        .group_by_key()
        .aggregate(lambda: Balance(0, 0.0),
                   lambda _key, payment, balance: Balance(balance.payments + 1, balance.total + payment.amount),
                   Materialized("balances", key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Balance)))
        .to_stream()
        .to(out, Produced(key_serde=Serdes.String(), value_serde=SpecificAvroSerde(Balance))))
    return builder.build()
