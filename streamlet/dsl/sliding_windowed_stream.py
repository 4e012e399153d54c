"""`SlidingWindowedKStream`: a grouped stream aggregated over sliding windows, waiting for an aggregation.

The aggregations mirror `TimeWindowedKStream`'s (same processor names, repartition rules, `Windowed`
keys with the time-windowed serde, here of window size = the time difference), with a window store
that keeps 2 * time difference + grace and Kafka Streams' sliding-window algorithm. Unlike time
windows, `count(materialized)` uses up no extra name index, as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.dsl import naming
from streamlet.dsl.emit_strategy import ChoosesEmitStrategy
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import sliding_window_retention_ms, sliding_window_store_builder
from streamlet.dsl.options import Materialized, Named
from streamlet.dsl.processors.aggregate import count_aggregator, count_initializer
from streamlet.dsl.processors.sliding_window_aggregate import SlidingWindowAggregateSupplier
from streamlet.dsl.processors.window_aggregate import (
    Aggregator,
    Initializer,
    reduce_initializer,
    reducing_aggregator,
)
from streamlet.dsl.sliding_windows import SlidingWindows
from streamlet.dsl.windowed_stream import time_windowed_table
from streamlet.serdes import Serdes

if TYPE_CHECKING:
    from streamlet.dsl.grouped_stream import KGroupedStream


class SlidingWindowedKStream(ChoosesEmitStrategy):
    """A grouped stream aggregated per sliding window (`KGroupedStream.windowed_by(SlidingWindows...)`):
    `count`, `reduce` and `aggregate` keep one result per key and window `[start, start + d]`, keyed by
    `Windowed(key, TimeWindow(start, start + d))`; `emit_strategy` chooses updates or final results."""

    def __init__(self, grouped: KGroupedStream, windows: SlidingWindows) -> None:
        self._grouped = grouped
        self.windows = windows

    def __repr__(self) -> str:
        return f"SlidingWindowedKStream({self._grouped.name!r}, {self.windows!r})"

    def count(self, materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """The number of records per key and window (records with a None value are dropped)."""
        materialized = materialized or Materialized()
        store_name = self._grouped._builder.names.materialized_store_name(materialized.name, naming.AGGREGATE,
                                                                          materialized.logging)
        materialized = materialized.copy(key_serde=materialized.key_serde or self._grouped.key_serde,
                                         value_serde=materialized.value_serde or Serdes.Long())
        return self._aggregation(named, naming.AGGREGATE, store_name, materialized, count_initializer,
                                 count_aggregator)

    def reduce(self, reducer: Callable[[Any, Any], Any], materialized: Materialized | None = None,
               named: Named | str | None = None) -> KTable:
        """Combine values per key and window: the first as is, then `reducer(aggregate, value)`."""
        if not callable(reducer):
            raise TypeError(f"reducer must be callable, got {reducer!r}")
        store_name, materialized = self._grouped._reduce_materialized(materialized)
        return self._aggregation(named, naming.REDUCE, store_name, materialized, reduce_initializer,
                                 reducing_aggregator(reducer))

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None, named: Named | str | None = None) -> KTable:
        """Fold values per key and window: `aggregator(key, value, aggregate)` from `initializer()`."""
        if not callable(initializer) or not callable(aggregator):
            raise TypeError("initializer and aggregator must be callable")
        store_name, materialized = self._grouped._aggregate_materialized(materialized)
        return self._aggregation(named, naming.AGGREGATE, store_name, materialized, initializer, aggregator)

    def _aggregation(self, named: Named | str | None, prefix: str, store_name: str, materialized: Materialized,
                     initializer: Initializer, aggregator: Aggregator) -> KTable:
        grouped, windows, emit = self._grouped, self.windows, self._emit_strategy
        if materialized.store_supplier is None:
            sliding_window_retention_ms(materialized, windows, store_name)  # fail here, as Kafka Streams does
        name = grouped._builder.names.name_or_generate(Named.resolve(named), prefix)
        supplier = SlidingWindowAggregateSupplier(store_name, windows, initializer, aggregator, emit)
        return time_windowed_table(
            grouped, name, store_name, supplier, materialized, windows.time_difference_ms,
            lambda: sliding_window_store_builder(materialized, store_name, windows, emit.on_close))
