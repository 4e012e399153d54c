"""`GlobalKTable`: a table every instance holds in full, for stream joins by any key.

Kafka Streams keeps a global table in a global store: the table's topic is read, all partitions, by
each instance's global thread (never by a stream task), and the topic itself is the store's
changelog. A stream joins it without repartitioning, mapping each record to the table key with a
`KeyValueMapper` (`KStream.join(global_table, key_selector, joiner)`).

The DSL writes it as Kafka Streams does: a source `<name>-source` / `KSTREAM-SOURCE-n` and a table
source processor `KTABLE-SOURCE-n` that puts each record in the store, always materialized (under
the `Materialized` name, else `<topic>-STATE-STORE-n`), never change-logged. A `Materialized` without
a store name is refused when the topology is built, as Kafka Streams 4.x refuses it (3.9.1 took it);
no `Materialized` at all gets the generated name.
"""

from __future__ import annotations

from streamlet.dsl import naming
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.materialize import is_versioned, timestamped_store_builder
from streamlet.dsl.options import Consumed, Materialized
from streamlet.dsl.processors.table import TableSourceSupplier
from streamlet.dsl.processors.value_getters import StoreValueGetterSupplier, ValueGetterSupplier
from streamlet.errors import TopologyError
from streamlet.topology import Topology


class GlobalKTable:
    """A table replicated in full to every instance (Kafka Streams' `GlobalKTable`), made by
    `StreamsBuilder.global_table`. It has no operations of its own: streams join it with
    `KStream.join(global_table, key_selector, joiner)` / `left_join`, and its store is queryable under
    `queryable_store_name`."""

    def __init__(self, builder: InternalBuilder, store_name: str, queryable_store_name: str | None) -> None:
        self._builder = builder
        self.store_name = store_name
        self._queryable_store_name = queryable_store_name

    def __repr__(self) -> str:
        return f"GlobalKTable({self.store_name!r})"

    @property
    def queryable_store_name(self) -> str | None:
        """The global store's name when the table was materialized under a name, else None."""
        return self._queryable_store_name

    def _value_getter_supplier(self) -> ValueGetterSupplier:
        return StoreValueGetterSupplier(self.store_name)


_UNNAMED_GLOBAL_STORE = (
    "Global stores must pass in suppliers with exactly one store but got 0: global_table({topic!r}) was given a "
    "Materialized without a store name, which Kafka Streams 4.x refuses when the topology is built; name the "
    "store (Materialized.as_(name)) or pass no Materialized")


def global_table(builder: InternalBuilder, topic: str, consumed: Consumed | None,
                 materialized: Materialized | None) -> GlobalKTable:
    """The nodes of `StreamsBuilder.global_table`, named as Kafka Streams names them."""
    if not isinstance(topic, str) or not topic:
        raise TopologyError(f"global_table() needs a topic name, got {topic!r}")
    names = builder.names
    unnamed = materialized is not None and materialized.name is None
    materialized = materialized or Materialized()
    if is_versioned(materialized):
        raise TopologyError("GlobalTables cannot be versioned.")
    if consumed is None:  # the store's serdes read the topic
        consumed = Consumed(materialized.key_serde, materialized.value_serde)
    else:  # Kafka Streams' rule: the topic's serdes (Consumed's, unset ones too) are the store's
        materialized = materialized.copy(key_serde=consumed.key_serde, value_serde=consumed.value_serde)
    store_name = names.materialized_store_name(materialized.name, topic + "-", logged=False)
    materialized = materialized.copy(logging=False)
    source_name = names.suffixed_or_generate(consumed.name, naming.TABLE_SOURCE_SUFFIX, naming.SOURCE)
    processor_name = names.name_or_generate(consumed.name, naming.KTABLE_SOURCE)
    supplier = TableSourceSupplier(store_name, store_name)
    key_serde, value_serde = materialized.key_serde, materialized.value_serde

    def write(topology: Topology, _parents: list[str]) -> None:
        if unnamed:
            raise TopologyError(_UNNAMED_GLOBAL_STORE.format(topic=topic))
        topology.add_global_store(
            timestamped_store_builder(materialized, store_name), source_name, topic, processor_name, supplier,
            key_deserializer=None if key_serde is None else key_serde.deserializer,
            value_deserializer=None if value_serde is None else value_serde.deserializer,
            timestamp_extractor=consumed.timestamp_extractor,
        )

    builder.add(GraphNode(processor_name, write))
    return GlobalKTable(builder, store_name, materialized.name)
