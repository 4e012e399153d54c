"""`KGroupedTable`: a table regrouped by `KTable.group_by`, waiting for `count`, `reduce` or `aggregate`.

Each aggregation repartitions the group updates (a `Change` of new and old value, in Kafka Streams'
format) through `<store name or Grouped name>-repartition`, then folds them with an adder and a
subtractor (see processors/table_aggregate.py). Names, store names and topic names are Kafka Streams'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.dsl import naming
from streamlet.dsl.change_serde import ChangeDeserializer, ChangeSerializer
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import is_versioned, timestamped_store_builder
from streamlet.dsl.options import Grouped, Materialized, Named
from streamlet.dsl.processors.table_aggregate import TableAggregateSupplier, TableReduceSupplier
from streamlet.dsl.repartition import repartition_topic_name
from streamlet.processor import RecordTimestampExtractor
from streamlet.serdes import Serdes
from streamlet.topology import InternalTopicSpec, Topology


class KGroupedTable:
    """A table regrouped by a new key (`KTable.group_by`): `count`, `reduce(adder, subtractor)` and
    `aggregate(initializer, adder, subtractor)` keep a result per new key, removing a row's old value from
    its old group before adding its new value, as Kafka Streams' `KGroupedTable`."""
    def __init__(self, builder: InternalBuilder, name: str, grouped: Grouped, graph_node: GraphNode) -> None:
        self._builder = builder
        self.name = name
        self.grouped = grouped
        self.key_serde = grouped.key_serde
        self.value_serde = grouped.value_serde
        self._node = graph_node
        self._repartition: GraphNode | None = None

    def __repr__(self) -> str:
        return f"KGroupedTable({self.name!r})"

    def count(self, materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """The number of rows per group: +1 for a row that joins it, -1 for one that leaves it."""
        materialized = materialized or Materialized()
        materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde,
                                         value_serde=materialized.value_serde or Serdes.Long())
        return self._aggregate(materialized, named, naming.KTABLE_AGGREGATE,
                               lambda store: TableAggregateSupplier(store, _zero, _plus_one, _minus_one))

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any],
               materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """`adder(aggregate, new_value)` for a row joining the group (the first row is the aggregate),
        `subtractor(aggregate, old_value)` for one leaving it."""
        if not callable(adder) or not callable(subtractor):
            raise TypeError("adder and subtractor must be callable")
        materialized = materialized or Materialized()
        materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde,
                                         value_serde=materialized.value_serde or self.value_serde)
        return self._aggregate(materialized, named, naming.KTABLE_REDUCE,
                               lambda store: TableReduceSupplier(store, adder, subtractor))

    def aggregate(self, initializer: Callable[[], Any], adder: Callable[[Any, Any, Any], Any],
                  subtractor: Callable[[Any, Any, Any], Any], materialized: Materialized | None = None,
                  named: Named | str | None = None) -> KTable:
        """`adder(key, new_value, aggregate)` from `initializer()`, `subtractor(key, old_value, aggregate)`."""
        if not callable(initializer) or not callable(adder) or not callable(subtractor):
            raise TypeError("initializer, adder and subtractor must be callable")
        materialized = materialized or Materialized()
        materialized = materialized.copy(key_serde=materialized.key_serde or self.key_serde)
        return self._aggregate(materialized, named, naming.KTABLE_AGGREGATE,
                               lambda store: TableAggregateSupplier(store, initializer, adder, subtractor))

    def _aggregate(self, materialized: Materialized, named: Named | str | None, prefix: str,
                   make_supplier: Callable[[str], TableAggregateSupplier | TableReduceSupplier]) -> KTable:
        builder = self._builder
        names = builder.names
        # Kafka Streams names the store KTABLE-AGGREGATE-STATE-STORE-... for reduce too
        store_name = names.materialized_store_name(materialized.name, naming.KTABLE_AGGREGATE, materialized.logging)
        given = Named.resolve(named)
        sink = names.suffixed_or_generate(given, "-sink", naming.SINK)
        source = names.suffixed_or_generate(given, "-source", naming.SOURCE)
        name = names.name_or_generate(given, prefix)
        user_topic = self.grouped.name
        if self._repartition is None or user_topic is None:
            self._repartition = self._repartition_node(repartition_topic_name(user_topic or store_name), sink, source)
        builder.add(self._repartition, self._node)
        supplier = make_supplier(store_name)

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            topology.add_state_store(timestamped_store_builder(materialized, store_name), name)

        node = builder.add(GraphNode(name, write), self._repartition)
        return KTable(builder, name, materialized.key_serde, materialized.value_serde, materialized.name, supplier,
                      node, output_versioned=is_versioned(materialized))

    def _repartition_node(self, topic: str, sink: str, source: str) -> GraphNode:
        """sink -> topic -> source (no filter in front, unlike a stream grouping's)."""
        key_serde, value_serde = self.key_serde, self.value_serde
        value_serializer = ChangeSerializer(None if value_serde is None else value_serde.serializer)
        value_deserializer = ChangeDeserializer(None if value_serde is None else value_serde.deserializer)

        def write(topology: Topology, parents: list[str]) -> None:
            topology.add_internal_topic(InternalTopicSpec(topic, "repartition"))
            topology.add_sink(sink, topic, *parents,
                              key_serializer=None if key_serde is None else key_serde.serializer,
                              value_serializer=value_serializer)
            topology.add_source(source, topic,
                                key_deserializer=None if key_serde is None else key_serde.deserializer,
                                value_deserializer=value_deserializer,
                                timestamp_extractor=RecordTimestampExtractor())

        return GraphNode(source, write)


def _zero() -> int:
    return 0


def _plus_one(_key: Any, _value: Any, count: int) -> int:
    return count + 1


def _minus_one(_key: Any, _value: Any, count: int) -> int:
    return count - 1
