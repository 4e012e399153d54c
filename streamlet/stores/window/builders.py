"""Window store builders: a supplier plus serdes and the logging choice; one store per task.

A window changelog is compacted *and* deleted by time, as Kafka Streams configures it: compaction
keeps one record per (key, window), and `retention.ms` (the store's retention plus one day, Kafka
Streams' default `windowstore.changelog.additional.retention.ms`) lets the broker drop windows the
store has long expired. `with_caching_enabled()` puts the record cache over the store (see
caching.py), as the DSL's windowed aggregations do by default.
"""

from __future__ import annotations

from typing import Any

from streamlet.serdes import resolve_serde
from streamlet.stores.builders import ConfigurableStoreBuilder
from streamlet.stores.window.api import WindowBytesStoreSupplier
from streamlet.stores.window.headers import (
    DslTimestampedWindowStoreWithHeaders,
    TypedTimestampedWindowStoreWithHeaders,
)
from streamlet.stores.window.typed import TypedTimestampedWindowStore, TypedWindowStore

ADDITIONAL_CHANGELOG_RETENTION_MS = 24 * 60 * 60 * 1000


def window_changelog_config(retention_ms: int) -> dict[str, str]:
    return {"cleanup.policy": "compact,delete", "retention.ms": str(retention_ms + ADDITIONAL_CHANGELOG_RETENTION_MS)}


class WindowStoreBuilder(ConfigurableStoreBuilder):
    def __init__(self, supplier: WindowBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None) -> None:
        if not isinstance(supplier, WindowBytesStoreSupplier):
            raise TypeError(
                f"a window store builder needs a window store supplier such as "
                f"Stores.persistent_window_store(name, retention, window_size), got {supplier!r}"
            )
        self.supplier = supplier
        self.name = supplier.name
        self.key_serde = resolve_serde(key_serde)
        self.value_serde = resolve_serde(value_serde)
        self.persistent = supplier.persistent
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = window_changelog_config(supplier.retention_ms)

    def build(self) -> TypedWindowStore:
        return TypedWindowStore(self.supplier.get(), self.key_serde, self.value_serde, **self._shape())

    logs_record_headers = False
    """True for a stream-stream join's side: its changelog records carry the headers of the record being processed
    (Kafka Streams 4.4 keeps a join's side as a window store with headers)."""

    def _shape(self) -> dict[str, Any]:
        shape = {"window_size_ms": self.supplier.window_size_ms, "retain_duplicates": self.supplier.retain_duplicates,
                 "logging_enabled": self.logging_enabled, "caching_enabled": self.caching_enabled}
        if self.logs_record_headers:
            shape["logs_record_headers"] = True
        return shape

    def _changelog_defaults(self) -> dict[str, str]:
        return window_changelog_config(self.supplier.retention_ms)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.supplier!r}, {self.key_serde!r}, {self.value_serde!r}, "
                f"logging_enabled={self.logging_enabled}, caching_enabled={self.caching_enabled})")


class TimestampedWindowStoreBuilder(WindowStoreBuilder):
    """Builds `TimestampedWindowStore`s: values are `ValueAndTimestamp` over the given value serde."""

    dsl_store = False
    """True for a windowed aggregation's store: `dsl.store.format` applies to it."""
    headers_format = False
    """Set by the runtime on a windowed aggregation's store under `dsl.store.format=HEADERS`: the store is then kept
    as a timestamped window store with headers (`DslTimestampedWindowStoreWithHeaders`)."""

    def build(self) -> TypedTimestampedWindowStore:
        kind = DslTimestampedWindowStoreWithHeaders if self.headers_format else TypedTimestampedWindowStore
        return kind(self.supplier.get(), self.key_serde, self.value_serde, **self._shape())


class TimestampedWindowStoreWithHeadersBuilder(WindowStoreBuilder):
    """Builds `TimestampedWindowStoreWithHeaders`: values are `ValueTimestampHeaders` over the given value serde,
    over any window supplier (LevelDB or in-memory)."""

    def build(self) -> TypedTimestampedWindowStoreWithHeaders:
        return TypedTimestampedWindowStoreWithHeaders(self.supplier.get(), self.key_serde, self.value_serde,
                                                      **self._shape())
