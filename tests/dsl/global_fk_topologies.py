"""Reference topologies with global tables, global stores and foreign-key joins, twins of
tests/java/reference/.../GlobalFkTopologies.java (their describe() goldens come from Kafka Streams)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet import Consumed, Materialized, Serdes, StreamsBuilder, TableJoined, Topology
from streamlet.processor import Processor, ProcessorContext
from streamlet.record import Record
from streamlet.stores.factory import Stores


class PassThrough(Processor):
    """Forwards every record unchanged (the Java side's `DescribeTopologies.PassThrough`)."""

    def process(self, record: Record) -> None:
        self.context.forward(record)


def _join(left: Any, right: Any) -> str:
    return f"{left}+{'-' if right is None else right}"


def _foreign_key(value: str) -> str:
    return value.split(":")[0]


def global_table_joins() -> Topology:
    builder = StreamsBuilder()
    global_table = builder.global_table("global-input")
    stream = builder.stream("input")
    stream.join(global_table, lambda k, v: v, _join).to("output")
    stream.left_join(global_table, lambda k, v: k, _join).to("output-left")
    return builder.build()


def global_table_named_after_stream() -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream("input")
    global_table = builder.global_table("global-input", Consumed(name="global-source"), Materialized("global-store"))
    stream.map_values(lambda v: v + "!").join(global_table, lambda k, v: k, _join).to("output")
    return builder.build()


class PutInStore(Processor):
    """Keeps the global store `global-kv`: each record is put as it comes."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = context.get_state_store("global-kv")

    def process(self, record: Record) -> None:
        self._store.put(record.key, record.value)


def global_store_processor_api() -> Topology:
    topology = Topology()
    topology.add_source("Source", "input")
    topology.add_processor("Process", PassThrough, "Source")
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("global-kv"), Serdes.String(),
                                           Serdes.String())
    topology.add_global_store(store.with_logging_disabled(), "global-source", "global-input", "global-processor",
                              PutInStore, key_deserializer=Serdes.String().deserializer,
                              value_deserializer=Serdes.String().deserializer)
    topology.add_sink("Sink", "output", "Process")
    topology.add_source("Other", "other-input")
    topology.add_sink("Other-sink", "other-output", "Other")
    return topology


def fk_join() -> Topology:
    builder = StreamsBuilder()
    orders, customers = builder.table("orders"), builder.table("customers")
    orders.join(customers, _foreign_key, _join).to_stream().to("output")
    return builder.build()


def fk_left_join_named_materialized() -> Topology:
    builder = StreamsBuilder()
    orders, customers = builder.table("orders"), builder.table("customers")
    orders.left_join(customers, _foreign_key, _join, TableJoined(name="fkj"), Materialized("fk-result")) \
        .to_stream().to("output")
    return builder.build()


def fk_join_of_derived_tables() -> Topology:
    builder = StreamsBuilder()
    orders = builder.table("orders").filter(lambda k, v: v is not None)
    customers = builder.table("customers").map_values(lambda v: v + "!")
    orders.join(customers, _foreign_key, _join).to_stream().to("output")
    return builder.build()


GLOBAL_FK_TOPOLOGIES: dict[str, Callable[[], Topology]] = {
    fn.__name__: fn
    for fn in (global_table_joins, global_table_named_after_stream, global_store_processor_api, fk_join,
               fk_left_join_named_materialized, fk_join_of_derived_tables)
}
