"""`TimeWindowedKStream`: a grouped stream cut into time windows, waiting for an aggregation.

The aggregations mirror `KGroupedStream`'s (same generated names and store names, same repartition
rules), but keep a window store and produce a `KTable` keyed by `Windowed(key, window)`. That
table's key serde is the time-windowed serde over the grouping's key serde, so `to_stream().to(...)`
writes keys as Kafka Streams does (key bytes, then the window start).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.dsl import naming
from streamlet.dsl.emit_strategy import ChoosesEmitStrategy
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import timestamped_window_store_builder, window_retention_ms
from streamlet.dsl.options import Materialized, Named
from streamlet.dsl.processors.aggregate import count_aggregator, count_initializer
from streamlet.dsl.processors.session_aggregate import Merger
from streamlet.dsl.processors.window_aggregate import (
    Aggregator,
    Initializer,
    WindowAggregateSupplier,
    reduce_initializer,
    reducing_aggregator,
)
from streamlet.dsl.time_windows import TimeWindows
from streamlet.windowed_serdes import TimeWindowedSerde

if TYPE_CHECKING:
    from streamlet.dsl.grouped_stream import KGroupedStream


def _count_merger(_key: Any, one: Any, two: Any) -> Any:
    return one + two


def _reducing_merger(reducer: Callable[[Any, Any], Any]) -> Merger:
    """Kafka Streams merges two reduced sessions with the reducer (the second as is if the first is empty)."""

    def merge(_key: Any, one: Any, two: Any) -> Any:
        return two if one is None else reducer(one, two)

    return merge


def time_windowed_table(grouped: KGroupedStream, name: str, store_name: str, supplier: Any,
                        materialized: Materialized, window_size_ms: int, store_builder: Callable[[], Any]) -> KTable:
    """The table of a time- or sliding-window aggregation: its node in the graph, keyed by
    `Windowed(key, TimeWindow)` with a window size of `window_size_ms` (what the serde needs to read
    a window's end back)."""
    node = grouped._aggregation_node(name, store_name, supplier, store_builder)
    key_serde = materialized.key_serde
    windowed_serde = None if key_serde is None else TimeWindowedSerde(key_serde, window_size_ms)
    return KTable(grouped._builder, name, windowed_serde, materialized.value_serde, materialized.name,
                  supplier, node)


class WindowedAggregations(ChoosesEmitStrategy):
    """`count` and `reduce` of a windowed grouping (time or session windows: `_aggregation` builds the
    node); the merger is what a session aggregation combines two sessions with."""

    _grouped: KGroupedStream

    def count(self, materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """The number of records per key and window (records with a None value count too, as in Java)."""
        store_name, materialized = self._grouped._count_materialized(materialized)
        return self._aggregation(named, naming.AGGREGATE, store_name, materialized, count_initializer,
                                 count_aggregator, _count_merger)

    def reduce(self, reducer: Callable[[Any, Any], Any], materialized: Materialized | None = None,
               named: Named | str | None = None) -> KTable:
        """Combine values per key and window: the first as is, then `reducer(aggregate, value)`."""
        if not callable(reducer):
            raise TypeError(f"reducer must be callable, got {reducer!r}")
        store_name, materialized = self._grouped._reduce_materialized(materialized)
        return self._aggregation(named, naming.REDUCE, store_name, materialized, reduce_initializer,
                                 reducing_aggregator(reducer), _reducing_merger(reducer))

    def _aggregation(self, named: Named | str | None, prefix: str, store_name: str, materialized: Materialized,
                     initializer: Initializer, aggregator: Aggregator, merger: Merger) -> KTable:
        raise NotImplementedError


class TimeWindowedKStream(WindowedAggregations):
    """A grouped stream aggregated per time window (`KGroupedStream.windowed_by(TimeWindows...)`): `count`,
    `reduce` and `aggregate` keep one result per key and window, keyed by `Windowed(key, TimeWindow)`;
    records later than a window's end plus its grace period are dropped."""
    def __init__(self, grouped: KGroupedStream, windows: TimeWindows) -> None:
        self._grouped = grouped
        self.windows = windows

    def __repr__(self) -> str:
        return f"TimeWindowedKStream({self._grouped.name!r}, {self.windows!r})"

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """Fold values per key and window: `aggregator(key, value, aggregate)` from `initializer()`."""
        if not callable(initializer) or not callable(aggregator):
            raise TypeError("initializer and aggregator must be callable")
        store_name, materialized = self._grouped._aggregate_materialized(materialized)
        return self._aggregation(named, naming.AGGREGATE, store_name, materialized, initializer, aggregator,
                                 _count_merger)

    def _aggregation(self, named: Named | str | None, prefix: str, store_name: str, materialized: Materialized,
                     initializer: Initializer, aggregator: Aggregator, merger: Merger) -> KTable:
        """Time windows never merge: `merger` is not used."""
        grouped, windows = self._grouped, self.windows
        if materialized.store_supplier is None:
            window_retention_ms(materialized, windows, store_name)  # fail here, as Kafka Streams does
        name = grouped._builder.names.name_or_generate(Named.resolve(named), prefix)
        emit = self._emit_strategy
        supplier = WindowAggregateSupplier(store_name, windows, initializer, aggregator, emit)
        return time_windowed_table(
            grouped, name, store_name, supplier, materialized, windows.size_ms,
            lambda: timestamped_window_store_builder(materialized, store_name, windows, emit.on_close))
