"""`CogroupedKStream`: several grouped streams folded into one aggregate per key (Kafka Streams' cogroup).

`KGroupedStream.cogroup(aggregator)` starts it, `.cogroup(other_grouped, aggregator)` adds streams (each
with its own aggregator, same aggregate type), `.aggregate(initializer, materialized)` or
`.windowed_by(TimeWindows | SlidingWindows | SessionWindows).aggregate(...)` finishes it. As in Kafka
Streams: the store is named first (`COGROUPKSTREAM-AGGREGATE-STATE-STORE-N` unless given); each
grouped stream that needs it is repartitioned (after its grouping name, else the store name); each
stream gets an aggregate processor (`COGROUPKSTREAM-AGGREGATE-N` or `<name>-cogroup-agg-<i>`), all
sharing the store (the first one owns it), and a pass-through merge node (`COGROUPKSTREAM-MERGE-N` or
`<name>-cogroup-merge`) is the resulting table. The cogrouped stream has no serdes of its own: the
store's come from `Materialized` or the defaults. Windowed cogroups always emit on window update. The
grouped streams' sources are co-partitioned (Kafka Streams' `ensureCopartitionWith`), which a streams group's
members announce as part of the topology.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.dsl.graph import GraphNode, InternalBuilder
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import (
    is_versioned,
    session_retention_ms,
    session_store_builder,
    sliding_window_retention_ms,
    sliding_window_store_builder,
    timestamped_store_builder,
    timestamped_window_store_builder,
    window_retention_ms,
)
from streamlet.dsl.options import Materialized, Named
from streamlet.dsl.processors.aggregate import StreamAggregateSupplier
from streamlet.dsl.processors.cogroup import CogroupMergeSupplier
from streamlet.dsl.processors.session_aggregate import SessionAggregateSupplier
from streamlet.dsl.processors.sliding_window_aggregate import SlidingWindowAggregateSupplier
from streamlet.dsl.processors.window_aggregate import WindowAggregateSupplier
from streamlet.dsl.repartition import repartition_node
from streamlet.dsl.session_windows import SessionWindows
from streamlet.dsl.sliding_windows import SlidingWindows
from streamlet.dsl.time_windows import TimeWindows
from streamlet.serdes import Serde
from streamlet.stores.api import StoreBuilder
from streamlet.topology import Topology
from streamlet.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde

if TYPE_CHECKING:
    from streamlet.dsl.grouped_stream import KGroupedStream

AGGREGATE_NAME = "COGROUPKSTREAM-AGGREGATE-"
MERGE_NAME = "COGROUPKSTREAM-MERGE-"

Aggregator = Callable[[Any, Any, Any], Any]
Initializer = Callable[[], Any]
_SupplierFactory = Callable[[str, Aggregator], Any]


class CogroupedKStream:
    """Grouped streams aggregated together: `cogroup(grouped, aggregator)` adds one (again for the same
    grouped stream replaces its aggregator), `aggregate(initializer, materialized)` makes the `KTable`,
    `windowed_by(windows)` aggregates per window instead."""

    def __init__(self, builder: InternalBuilder, grouped: KGroupedStream, aggregator: Aggregator) -> None:
        self._builder = builder
        self._patterns: list[tuple[KGroupedStream, Aggregator]] = []
        self._parent_nodes: dict[int, GraphNode] = {}
        self.cogroup(grouped, aggregator)

    def __repr__(self) -> str:
        return f"CogroupedKStream({[g.name for g, _ in self._patterns]!r})"

    def cogroup(self, grouped: KGroupedStream, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Add `grouped`, folded with `aggregator(key, value, aggregate)`. Returns this cogrouped stream."""
        from streamlet.dsl.grouped_stream import KGroupedStream  # not at the top: grouped_stream imports this module

        if not isinstance(grouped, KGroupedStream):
            raise TypeError(f"cogroup() takes a KGroupedStream, got {grouped!r}")
        if not callable(aggregator):
            raise TypeError(f"aggregator must be callable, got {aggregator!r}")
        for i, (existing, _) in enumerate(self._patterns):
            if existing is grouped:
                self._patterns[i] = (grouped, aggregator)
                return self
        self._patterns.append((grouped, aggregator))
        return self

    def aggregate(self, initializer: Callable[[], Any], materialized: Materialized | None = None,
                  named: Named | str | None = None) -> KTable:
        """One aggregate per key over all cogrouped streams, starting from `initializer()`."""
        if not callable(initializer):
            raise TypeError(f"initializer must be callable, got {initializer!r}")
        store_name, materialized = self._materialized(materialized)

        def supplier(name: str, aggregator: Aggregator) -> StreamAggregateSupplier:
            made = StreamAggregateSupplier(name, initializer, aggregator)
            made.versioned = is_versioned(materialized)  # each cogrouped stream folds into the versioned store
            return made

        table = self._build(named, store_name, materialized, supplier,
                            lambda: timestamped_store_builder(materialized, store_name),
                            materialized.key_serde, None)
        table._output_versioned = is_versioned(materialized)
        return table

    def windowed_by(self, windows: TimeWindows | SlidingWindows | SessionWindows) -> WindowedCogroupedKStream:
        """Aggregate per key and time window, sliding window or session."""
        if not isinstance(windows, TimeWindows | SlidingWindows | SessionWindows):
            raise TypeError(f"windowed_by() takes TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")
        return WindowedCogroupedKStream(self, windows)

    # -- building ------------------------------------------------------------------------------------
    def _materialized(self, materialized: Materialized | None) -> tuple[str, Materialized]:
        materialized = materialized or Materialized()
        store_name = self._builder.names.materialized_store_name(materialized.name, AGGREGATE_NAME,
                                                                 materialized.logging)
        return store_name, materialized

    def _build(self, named: Named | str | None, store_name: str, materialized: Materialized,
               make_supplier: _SupplierFactory, store_builder: Callable[[], StoreBuilder],
               key_serde: Serde[Any] | None, grace_ms: int | None, windowed: bool = False) -> KTable:
        builder, names = self._builder, self._builder.names
        given = Named.resolve(named)
        parents = self._repartitions(store_name)
        suppliers, nodes = [], []
        for i, (grouped, aggregator) in enumerate(self._patterns):
            name = names.suffixed_or_generate(given, f"-cogroup-agg-{i}", AGGREGATE_NAME)
            supplier = make_supplier(store_name, aggregator)
            suppliers.append(supplier)
            nodes.append(builder.add(GraphNode(name, _aggregate_writer(name, supplier, store_name,
                                                                       store_builder if i == 0 else None)),
                                     parents[id(grouped)]))
        merge_name = names.suffixed_or_generate(given, "-cogroup-merge", MERGE_NAME)
        merge = CogroupMergeSupplier(suppliers, store_name, windowed, grace_ms)
        # Kafka Streams co-partitions the grouped streams' sources (before any repartition), one stream or more.
        grouped_nodes = list(dict.fromkeys(grouped._node.node_name for grouped, _ in self._patterns))

        def write(topology: Topology, parent_names: list[str]) -> None:
            topology.add_processor(merge_name, merge, *parent_names)
            topology.add_copartition_group(*grouped_nodes)

        node = builder.add(GraphNode(merge_name, write), *nodes)
        return KTable(builder, merge_name, key_serde, materialized.value_serde, materialized.name, merge, node)

    def _repartitions(self, store_name: str) -> dict[int, GraphNode]:
        """Each grouped stream's parent node: a repartition if its key may have changed (Kafka Streams
        names one for every such stream, and uses only the first made for a stream)."""
        for grouped, _ in self._patterns:
            if grouped.repartition_required:
                node = repartition_node(self._builder, grouped.grouped.name or store_name, grouped.key_serde,
                                        grouped.value_serde)
                if id(grouped) not in self._parent_nodes:
                    self._builder.add(node, grouped._node)
                    self._parent_nodes[id(grouped)] = node
            else:
                self._parent_nodes[id(grouped)] = grouped._node
        return self._parent_nodes


def _aggregate_writer(name: str, supplier: Any, store_name: str,
                      store_builder: Callable[[], StoreBuilder] | None) -> Callable[[Topology, list[str]], None]:
    def write(topology: Topology, parent_names: list[str]) -> None:
        topology.add_processor(name, supplier, *parent_names)
        if store_builder is not None:
            topology.add_state_store(store_builder(), name)
        else:
            topology.connect_processor_and_state_stores(name, store_name)

    return write


class WindowedCogroupedKStream:
    """A cogrouped stream aggregated per window (`CogroupedKStream.windowed_by`): `aggregate(initializer,
    materialized)`, with a `merger` too for session windows. Results are keyed by `Windowed`."""

    def __init__(self, cogrouped: CogroupedKStream, windows: TimeWindows | SlidingWindows | SessionWindows) -> None:
        self._cogrouped = cogrouped
        self.windows = windows

    def __repr__(self) -> str:
        return f"WindowedCogroupedKStream({self._cogrouped!r}, {self.windows!r})"

    def aggregate(self, initializer: Callable[[], Any], merger: Any = None, materialized: Materialized | None = None,
                  named: Named | str | None = None) -> KTable:
        """Fold each window's records from `initializer()` with the streams' aggregators; session windows
        also need `merger(key, aggregate_one, aggregate_two)` (the second argument). For time and sliding
        windows the second positional argument may be the `Materialized`."""
        if isinstance(merger, Materialized):
            merger, materialized = None, merger
        if not callable(initializer):
            raise TypeError(f"initializer must be callable, got {initializer!r}")
        windows, cogrouped = self.windows, self._cogrouped
        if isinstance(windows, SessionWindows) and not callable(merger):
            raise TypeError("a session-windowed cogroup needs a merger")
        store_name, materialized = cogrouped._materialized(materialized)
        key_serde = materialized.key_serde
        grace: int
        make: _SupplierFactory
        store: Callable[[], StoreBuilder]
        windowed_serde: Serde[Any] | None
        if isinstance(windows, SessionWindows):
            session_windows = windows
            if materialized.store_supplier is None:
                session_retention_ms(materialized, session_windows, store_name)

            def make(name: str, aggregator: Aggregator) -> Any:
                return SessionAggregateSupplier(name, session_windows, initializer, aggregator, merger)

            def store() -> StoreBuilder:
                return session_store_builder(materialized, store_name, session_windows)

            windowed_serde = None if key_serde is None else SessionWindowedSerde(key_serde)
            grace = windows.grace_ms + windows.gap_ms
        elif isinstance(windows, SlidingWindows):
            sliding = windows
            if materialized.store_supplier is None:
                sliding_window_retention_ms(materialized, sliding, store_name)

            def make(name: str, aggregator: Aggregator) -> Any:
                return SlidingWindowAggregateSupplier(name, sliding, initializer, aggregator)

            def store() -> StoreBuilder:
                return sliding_window_store_builder(materialized, store_name, sliding, False)

            windowed_serde = None if key_serde is None else TimeWindowedSerde(key_serde, sliding.time_difference_ms)
            grace = windows.grace_ms
        else:
            time_windows = windows
            if materialized.store_supplier is None:
                window_retention_ms(materialized, time_windows, store_name)

            def make(name: str, aggregator: Aggregator) -> Any:
                return WindowAggregateSupplier(name, time_windows, initializer, aggregator)

            def store() -> StoreBuilder:
                return timestamped_window_store_builder(materialized, store_name, time_windows)

            windowed_serde = None if key_serde is None else TimeWindowedSerde(key_serde, time_windows.size_ms)
            grace = windows.grace_ms
        return cogrouped._build(named, store_name, materialized, make, store, windowed_serde, grace, windowed=True)
