"""`KGroupedStream`: a stream grouped by key, waiting for an aggregation (`count`, `reduce`, `aggregate`),
possibly per time window (`windowed_by`).

The aggregation is where the repartition happens when the grouping key may differ from the record
key. The repartition topic is named after `Grouped(name=...)` if given, else after the aggregation's
store. A named grouping is repartitioned once and shared by all its aggregations; an unnamed one gets
one repartition per aggregation (each named after its own store), as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from streamlet.dsl import naming
from streamlet.dsl.cogrouped_stream import CogroupedKStream
from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import is_versioned, timestamped_store_builder
from streamlet.dsl.options import Grouped, Materialized, Named
from streamlet.dsl.processors.aggregate import (
    StreamAggregateSupplier,
    StreamReduceSupplier,
    count_aggregator,
    count_initializer,
)
from streamlet.dsl.repartition import repartition_node
from streamlet.dsl.session_windowed_stream import SessionWindowedKStream
from streamlet.dsl.session_windows import SessionWindows
from streamlet.dsl.sliding_windowed_stream import SlidingWindowedKStream
from streamlet.dsl.sliding_windows import SlidingWindows
from streamlet.dsl.time_windows import TimeWindows
from streamlet.dsl.windowed_stream import TimeWindowedKStream
from streamlet.processor import ProcessorSupplier
from streamlet.serdes import Serdes
from streamlet.stores.api import StoreBuilder
from streamlet.topology import Topology


class KGroupedStream:
    """A stream grouped by key, ready to aggregate (`KStream.group_by_key` / `group_by`): `count`, `reduce` and
    `aggregate` give a `KTable` of the running result per key, kept in a state store;
    `windowed_by(TimeWindows | SlidingWindows | SessionWindows)` aggregates per window instead, and
    `cogroup(aggregator)` starts an aggregation together with other grouped streams."""
    def __init__(self, builder: InternalBuilder, name: str, grouped: Grouped, repartition_required: bool,
                 graph_node: GraphNode) -> None:
        self._builder = builder
        self.name = name
        self.grouped = grouped
        self.key_serde = grouped.key_serde
        self.value_serde = grouped.value_serde
        self.repartition_required = repartition_required
        self._node = graph_node
        self._repartition: GraphNode | None = None

    def __repr__(self) -> str:
        return f"KGroupedStream({self.name!r})"

    def count(self, materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """The number of records per key, as Long values unless `materialized` gives another serde."""
        store_name, materialized = self._count_materialized(materialized)
        name = self._builder.names.name_or_generate(Named.resolve(named), naming.AGGREGATE)
        supplier = StreamAggregateSupplier(store_name, count_initializer, count_aggregator)
        return self._table(name, store_name, materialized, supplier)

    def reduce(self, reducer: Callable[[Any, Any], Any], materialized: Materialized | None = None,
               named: Named | str | None = None) -> KTable:
        """Combine values per key: the first value as is, then `reducer(aggregate, value)`."""
        if not callable(reducer):
            raise TypeError(f"reducer must be callable, got {reducer!r}")
        store_name, materialized = self._reduce_materialized(materialized)
        name = self._builder.names.name_or_generate(Named.resolve(named), naming.REDUCE)
        return self._table(name, store_name, materialized, StreamReduceSupplier(store_name, reducer))

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """Fold values per key: `aggregator(key, value, aggregate)`, starting from `initializer()`."""
        if not callable(initializer) or not callable(aggregator):
            raise TypeError("initializer and aggregator must be callable")
        store_name, materialized = self._aggregate_materialized(materialized)
        name = self._builder.names.name_or_generate(Named.resolve(named), naming.AGGREGATE)
        supplier = StreamAggregateSupplier(store_name, initializer, aggregator)
        return self._table(name, store_name, materialized, supplier)

    @overload
    def windowed_by(self, windows: TimeWindows) -> TimeWindowedKStream: ...

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedKStream: ...

    @overload
    def windowed_by(self, windows: SlidingWindows) -> SlidingWindowedKStream: ...

    def windowed_by(self, windows: TimeWindows | SessionWindows | SlidingWindows
                    ) -> TimeWindowedKStream | SessionWindowedKStream | SlidingWindowedKStream:
        """Aggregate per key and time window (`TimeWindows`), sliding window (`SlidingWindows`) or session
        (`SessionWindows`); results are keyed by `Windowed`."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedKStream(self, windows)
        if not isinstance(windows, TimeWindows):
            raise TypeError(f"windowed_by() takes TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")
        return TimeWindowedKStream(self, windows)

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Start a cogrouped aggregation with this stream folded by `aggregator(key, value, aggregate)`;
        add other grouped streams with `.cogroup(grouped, aggregator)`, finish with `.aggregate(...)`."""
        return CogroupedKStream(self._builder, self, aggregator)

    # -- shared with the windowed aggregations: store names and serdes, in Kafka Streams' index order --
    def _count_materialized(self, materialized: Materialized | None) -> tuple[str, Materialized]:
        names = self._builder.names
        if materialized is not None and materialized.name is None:
            names.store_name(naming.AGGREGATE)  # Kafka Streams uses up an extra index here
        materialized = materialized or Materialized()
        store_name = names.materialized_store_name(materialized.name, naming.AGGREGATE, materialized.logging)
        return store_name, materialized.copy(
            key_serde=materialized.key_serde or self.key_serde,
            value_serde=materialized.value_serde or Serdes.Long(),
        )

    def _reduce_materialized(self, materialized: Materialized | None) -> tuple[str, Materialized]:
        materialized = materialized or Materialized()
        store_name = self._builder.names.materialized_store_name(materialized.name, naming.REDUCE,
                                                                 materialized.logging)
        return store_name, materialized.copy(
            key_serde=materialized.key_serde or self.key_serde,
            value_serde=materialized.value_serde or self.value_serde,
        )

    def _aggregate_materialized(self, materialized: Materialized | None) -> tuple[str, Materialized]:
        materialized = materialized or Materialized()
        store_name = self._builder.names.materialized_store_name(materialized.name, naming.AGGREGATE,
                                                                 materialized.logging)
        return store_name, materialized.copy(key_serde=materialized.key_serde or self.key_serde)

    def _table(self, name: str, store_name: str, materialized: Materialized,
               supplier: StreamAggregateSupplier | StreamReduceSupplier) -> KTable:
        supplier.versioned = is_versioned(materialized)  # a versioned aggregation keeps versions of each aggregate
        node = self._aggregation_node(name, store_name, supplier,
                                     lambda: timestamped_store_builder(materialized, store_name))
        return KTable(self._builder, name, materialized.key_serde, materialized.value_serde, materialized.name,
                      supplier, node, output_versioned=supplier.versioned)

    def _aggregation_node(self, name: str, store_name: str, supplier: ProcessorSupplier,
                         store_builder: Callable[[], StoreBuilder]) -> GraphNode:
        """The aggregation's processor with its store, behind a repartition when the key may have changed."""
        builder = self._builder
        parent = self._node
        if self.repartition_required:
            user_topic = self.grouped.name
            node = repartition_node(builder, user_topic or store_name, self.key_serde, self.value_serde)
            if self._repartition is None or user_topic is None:
                self._repartition = node
            builder.add(self._repartition, self._node)
            parent = self._repartition

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(name, supplier, *parent_names)
            topology.add_state_store(store_builder(), name)

        return builder.add(GraphNode(name, write), parent)
