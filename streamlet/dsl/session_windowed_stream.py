"""`SessionWindowedKStream`: a grouped stream cut into session windows, waiting for an aggregation.

As `TimeWindowedKStream` (same names, store names and repartition rules), with a session store and a
merger for `aggregate` (how two sessions' aggregates combine when a record bridges them). The
resulting table is keyed by `Windowed(key, SessionWindow(start, end))`; its key serde is the
session-windowed serde over the grouping's key serde.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamlet.dsl import naming
from streamlet.dsl.ktable import KTable
from streamlet.dsl.materialize import session_retention_ms, session_store_builder
from streamlet.dsl.options import Materialized, Named
from streamlet.dsl.processors.session_aggregate import Merger, SessionAggregateSupplier
from streamlet.dsl.processors.window_aggregate import Aggregator, Initializer
from streamlet.dsl.session_windows import SessionWindows
from streamlet.dsl.windowed_stream import WindowedAggregations
from streamlet.windowed_serdes import SessionWindowedSerde

if TYPE_CHECKING:
    from streamlet.dsl.grouped_stream import KGroupedStream


class SessionWindowedKStream(WindowedAggregations):
    """A grouped stream aggregated per session (`KGroupedStream.windowed_by(SessionWindows...)`): records of a key
    closer than the inactivity gap share a session, and sessions merge when a record bridges them; results
    are keyed by `Windowed(key, SessionWindow)`."""
    def __init__(self, grouped: KGroupedStream, windows: SessionWindows) -> None:
        self._grouped = grouped
        self.windows = windows

    def __repr__(self) -> str:
        return f"SessionWindowedKStream({self._grouped.name!r}, {self.windows!r})"

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  merger: Callable[[Any, Any, Any], Any], materialized: Materialized | None = None,
                  named: Named | str | None = None) -> KTable:
        """Fold values per key and session: `aggregator(key, value, aggregate)` from `initializer()`;
        `merger(key, aggregate_one, aggregate_two)` when a record merges sessions."""
        if not callable(initializer) or not callable(aggregator) or not callable(merger):
            raise TypeError("initializer, aggregator and merger must be callable")
        store_name, materialized = self._grouped._aggregate_materialized(materialized)
        return self._aggregation(named, naming.AGGREGATE, store_name, materialized, initializer, aggregator, merger)

    def _aggregation(self, named: Named | str | None, prefix: str, store_name: str, materialized: Materialized,
                     initializer: Initializer, aggregator: Aggregator, merger: Merger) -> KTable:
        grouped, windows = self._grouped, self.windows
        if materialized.store_supplier is None:
            session_retention_ms(materialized, windows, store_name)  # fail here, as Kafka Streams does
        name = grouped._builder.names.name_or_generate(Named.resolve(named), prefix)
        emit = self._emit_strategy
        supplier = SessionAggregateSupplier(store_name, windows, initializer, aggregator, merger, emit)
        node = grouped._aggregation_node(name, store_name, supplier,
                                        lambda: session_store_builder(materialized, store_name, windows, emit.on_close))
        key_serde = materialized.key_serde
        return KTable(grouped._builder, name, None if key_serde is None else SessionWindowedSerde(key_serde),
                      materialized.value_serde, materialized.name, supplier, node)
