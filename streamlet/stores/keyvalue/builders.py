"""Key-value store builders: a bytes store supplier plus serdes and the logging/caching choices.

One store per task: the plain `KeyValueStore` (Processor API) or the timestamped one the DSL's
aggregations keep (`ValueAndTimestamp` values).
"""

from __future__ import annotations

from typing import Any

from streamlet.serdes import resolve_serde
from streamlet.stores.builders import DEFAULT_CHANGELOG_CONFIG, ConfigurableStoreBuilder
from streamlet.stores.keyvalue.api import KeyValueBytesStoreSupplier
from streamlet.stores.keyvalue.headers import (
    DslTimestampedKeyValueStoreWithHeaders,
    TypedTimestampedKeyValueStoreWithHeaders,
)
from streamlet.stores.keyvalue.timestamped import TypedTimestampedKeyValueStore
from streamlet.stores.keyvalue.typed import TypedKeyValueStore


class KeyValueStoreBuilder(ConfigurableStoreBuilder):
    def __init__(self, supplier: KeyValueBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None) -> None:
        if not isinstance(supplier, KeyValueBytesStoreSupplier):
            hint = (" (a versioned store supplier goes to Stores.versioned_key_value_store_builder)"
                    if type(supplier).__name__.endswith("VersionedBytesStoreSupplier") else "")
            raise TypeError(
                f"a key-value store builder needs a store supplier such as "
                f"Stores.persistent_key_value_store(name), got {supplier!r}{hint}"
            )
        self.supplier = supplier
        self.name = supplier.name
        self.key_serde = resolve_serde(key_serde)
        self.value_serde = resolve_serde(value_serde)
        self.persistent = supplier.persistent
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = dict(DEFAULT_CHANGELOG_CONFIG)

    def build(self) -> TypedKeyValueStore:
        return TypedKeyValueStore(
            self.supplier.get(), self.key_serde, self.value_serde,
            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.supplier!r}, {self.key_serde!r}, {self.value_serde!r}, "
            f"logging_enabled={self.logging_enabled}, caching_enabled={self.caching_enabled})"
        )


class TimestampedKeyValueStoreBuilder(KeyValueStoreBuilder):
    """Builds `TimestampedKeyValueStore`s: values are `ValueAndTimestamp` over the given value serde."""

    dsl_store = False
    """True for a DSL table's store: `dsl.store.format` applies to it."""
    headers_format = False
    """Set by the runtime on a DSL table's store under `dsl.store.format=HEADERS`: the store is then kept as a
    timestamped key-value store with headers (`DslTimestampedKeyValueStoreWithHeaders`)."""

    def build(self) -> TypedTimestampedKeyValueStore | DslTimestampedKeyValueStoreWithHeaders:
        kind = DslTimestampedKeyValueStoreWithHeaders if self.headers_format else TypedTimestampedKeyValueStore
        return kind(
            self.supplier.get(), self.key_serde, self.value_serde,
            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled,
        )


class TimestampedKeyValueStoreWithHeadersBuilder(KeyValueStoreBuilder):
    """Builds `TimestampedKeyValueStoreWithHeaders`s (values `ValueTimestampHeaders` over the given value serde)
    from a key-value bytes store supplier: LevelDB or in-memory."""

    def build(self) -> TypedTimestampedKeyValueStoreWithHeaders:
        return TypedTimestampedKeyValueStoreWithHeaders(
            self.supplier.get(), self.key_serde, self.value_serde,
            logging_enabled=self.logging_enabled, caching_enabled=self.caching_enabled,
        )
