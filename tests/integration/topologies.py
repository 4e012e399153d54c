"""Topologies and settings shared by several integration test files (on the real broker)."""

from __future__ import annotations

from streamlet import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Topology
from streamlet.processor import Processor
from streamlet.record import Record

STREAMS = {"group.protocol": "streams"}
"""The setting that makes an instance a member of a streams group (KIP-1071)."""


class Upper(Processor):
    """Upper-cases the value and marks the record with the header seen-by=upper."""

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(record.value.upper()).with_headers([("seen-by", b"upper")]))


def upper_topology(inp: str, out: str) -> Topology:
    """A Processor-API pipe (no DSL): upper-cases each String value and adds the header seen-by=upper."""
    t = Topology()
    t.add_source("src", inp, key_deserializer=Serdes.String().deserializer,
                 value_deserializer=Serdes.String().deserializer)
    t.add_processor("upper", Upper, "src")
    t.add_sink("sink", out, "upper", key_serializer=Serdes.String().serializer,
               value_serializer=Serdes.String().serializer)
    return t


def count_topology(inp: str, out: str) -> Topology:
    """Counts each key's records in the store "counts"; String keys, Long counts."""
    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .group_by_key()
     .count(Materialized("counts"))
     .to_stream()
     .to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()


def failing_topology(inp: str, out: str, failures: list[str]) -> Topology:
    """Upper-cases values; the first "boom" raises (later ones pass: `failures` records the one)."""

    def upper(v: str) -> str:
        if v == "boom" and not failures:
            failures.append(v)
            raise RuntimeError("boom")
        return v.upper()

    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .map_values(upper)
     .to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.String())))
    return builder.build()


def counting_topology(inp: str, out: str, store: str) -> Topology:
    """Counts each value's records (grouped by value, so through a repartition topic) in `store`."""
    builder = StreamsBuilder()
    (builder.stream(inp, Consumed(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .group_by(lambda _k, v: v, Grouped(key_serde=Serdes.String(), value_serde=Serdes.String()))
     .count(Materialized(store))
     .to_stream().to(out, Produced(key_serde=Serdes.String(), value_serde=Serdes.Long())))
    return builder.build()
