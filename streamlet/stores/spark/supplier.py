"""Suppliers of Spark-backed bytes stores, and `over_spark_state`, which rebuilds a topology's store on them.

A topology names its stores' backends (LevelDB, memory); on Spark every store lives in Spark's state
instead, whatever the topology chose, under the same typed, cached layers the builder adds. Change
logging is off under at-least-once: Spark's checkpoint is how that state recovers, so a changelog
topic would only cost. Under exactly-once the builder's own choice stands: the changelog, written in
the task's transaction, is how Spark's state catches up with Kafka after a replayed batch and how an
application's state moves between Spark and the asyncio runtime (see `streamlet.spark.catch_up`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from streamlet.errors import TopologyError
from streamlet.stores.api import StateStore, StoreBuilder
from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueBytesStoreSupplier
from streamlet.stores.keyvalue.builders import KeyValueStoreBuilder
from streamlet.stores.spark.keyvalue import SparkKeyValueBytesStore
from streamlet.stores.spark.state import SparkStoreState
from streamlet.stores.spark.window import SparkWindowBytesStore
from streamlet.stores.window.api import WindowBytesStore, WindowBytesStoreSupplier
from streamlet.stores.window.builders import WindowStoreBuilder


class SparkKeyValueBytesStoreSupplier(KeyValueBytesStoreSupplier):
    def __init__(self, name: str, state: SparkStoreState) -> None:
        self.name = name
        self._state = state

    def get(self) -> KeyValueBytesStore:
        return SparkKeyValueBytesStore(self.name, self._state)

    @property
    def persistent(self) -> bool:
        return True

    @property
    def metrics_scope(self) -> str:
        return "spark"


class SparkWindowBytesStoreSupplier(WindowBytesStoreSupplier):
    def __init__(self, like: WindowBytesStoreSupplier, state: SparkStoreState) -> None:
        self.name = like.name
        self.retention_ms = like.retention_ms
        self.window_size_ms = like.window_size_ms
        self.retain_duplicates = like.retain_duplicates
        self._state = state

    def get(self) -> WindowBytesStore:
        return SparkWindowBytesStore(self.name, self.retention_ms, self._state)

    @property
    def persistent(self) -> bool:
        return True

    @property
    def metrics_scope(self) -> str:
        return "spark-window"


def check_spark_backend(builder: StoreBuilder) -> None:
    """Raise `TopologyError` for a store the Spark backend cannot hold (checked before any query starts)."""
    if not isinstance(builder, KeyValueStoreBuilder | WindowStoreBuilder):
        raise TopologyError(f"store {builder.name!r}: the Spark engine has no backend for "
                            f"{type(builder).__name__} yet (key-value and window stores only)")


def over_spark_state(state_of: Callable[[str], SparkStoreState],
                     logged: bool = False) -> Callable[[StoreBuilder], StateStore]:
    """A `StreamTask` store opener that builds each store as its builder would, but over Spark's state
    (`state_of(store name)`); with a changelog only if `logged` and the builder logs. The topology's
    builders are not changed."""

    def open_store(builder: StoreBuilder) -> StateStore:
        spark_builder: KeyValueStoreBuilder | WindowStoreBuilder = copy.copy(builder)  # type: ignore[assignment]
        if isinstance(builder, KeyValueStoreBuilder):
            spark_builder.supplier = SparkKeyValueBytesStoreSupplier(builder.name, state_of(builder.name))
        elif isinstance(builder, WindowStoreBuilder):
            spark_builder.supplier = SparkWindowBytesStoreSupplier(builder.supplier, state_of(builder.name))
        else:
            check_spark_backend(builder)
        if not logged:
            spark_builder.with_logging_disabled()
        return spark_builder.build()

    return open_store
