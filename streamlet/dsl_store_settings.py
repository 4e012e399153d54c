"""The two settings that pick the DSL's default store backend: their names, their values and their check.

`dsl.store.suppliers.class` (Kafka Streams' KIP-954 `BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers`,
the default, or `$InMemoryDslStoreSuppliers`) and the older `default.dsl.store` (`rocksDB` / `in_memory`).
A `StreamsConfig` refuses a value Kafka Streams refuses, with its message, when it is made; the DSL
(`streamlet.dsl.store_suppliers`) reads the choice when it builds and when the application runs a topology.
Both sides need the names, so they sit here, beside the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamlet.errors import ConfigError

DSL_STORE_SUPPLIERS_CLASS = "dsl.store.suppliers.class"
DEFAULT_DSL_STORE = "default.dsl.store"
ROCKS_DB = "rocksDB"
IN_MEMORY = "in_memory"
ROCKS_DB_SUPPLIERS = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers"
IN_MEMORY_SUPPLIERS = "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers"
_CLASSES = {ROCKS_DB_SUPPLIERS: False, IN_MEMORY_SUPPLIERS: True}
_STORE_TYPES = {ROCKS_DB: False, IN_MEMORY: True}


def check_settings(values: Mapping[str, Any]) -> None:
    """Refuse a value Kafka Streams' StreamsConfig refuses (its messages); called when a config is made."""
    store = values.get(DEFAULT_DSL_STORE)
    if store is not None and store not in _STORE_TYPES:
        raise ConfigError(f"Invalid value {store} for configuration {DEFAULT_DSL_STORE}: String must be one of: "
                          f"{ROCKS_DB}, {IN_MEMORY}")
    suppliers = values.get(DSL_STORE_SUPPLIERS_CLASS)
    if suppliers is not None and (not isinstance(suppliers, str) or suppliers.strip() not in _CLASSES):
        raise ConfigError(f"Invalid value {suppliers} for configuration {DSL_STORE_SUPPLIERS_CLASS}: Class "
                          f"{suppliers} could not be found. streamlet has Kafka Streams' two built-in ones: "
                          f"{ROCKS_DB_SUPPLIERS} (LevelDB here) and {IN_MEMORY_SUPPLIERS}")


def topology_in_memory(config: Any) -> bool | None:
    """`StreamsBuilder(config)`'s choice (Kafka Streams' `TopologyConfig.resolveDslStoreSuppliers`): the
    suppliers class when set, else `default.dsl.store` when set, else None (the application decides)."""
    given = config.given_keys
    if DSL_STORE_SUPPLIERS_CLASS in given:
        return _CLASSES[str(config[DSL_STORE_SUPPLIERS_CLASS]).strip()]
    if DEFAULT_DSL_STORE in given:
        return _STORE_TYPES[str(config[DEFAULT_DSL_STORE])]
    return None


def application_in_memory(config: Any) -> bool:
    """The application's choice for stores nothing else decided: only `dsl.store.suppliers.class` counts."""
    value = config.get(DSL_STORE_SUPPLIERS_CLASS)
    return value is not None and _CLASSES[str(value).strip()]
