"""The settings that pick the DSL's default store backend, and the format of its stores: names, values, checks.

`dsl.store.suppliers.class` (Kafka Streams' KIP-954 `BuiltInDslStoreSuppliers$RocksDBDslStoreSuppliers`,
the default, or `$InMemoryDslStoreSuppliers`) and the older `default.dsl.store` (`rocksDB` / `in_memory`).
A `StreamsConfig` refuses a value Kafka Streams refuses, with its message, when it is made; the DSL
(`streamlet.dsl.store_suppliers`) reads the choice when it builds and when the application runs a topology.
Both sides need the names, so they sit here, beside the configuration.

`dsl.store.format` (Kafka Streams 4.4's KIP-1285): `DEFAULT`, or `HEADERS` (either case) to keep the DSL's
key-value stores as timestamped key-value stores with headers, and the stores of its windowed and session
aggregations as window and session stores with headers; the application's setting decides.
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
DSL_STORE_FORMAT = "dsl.store.format"
FORMAT_DEFAULT = "DEFAULT"
FORMAT_HEADERS = "HEADERS"
_CLASSES = {ROCKS_DB_SUPPLIERS: False, IN_MEMORY_SUPPLIERS: True}
_STORE_TYPES = {ROCKS_DB: False, IN_MEMORY: True}


def check_settings(values: Mapping[str, Any]) -> None:
    """Refuse a value Kafka Streams' StreamsConfig refuses (its messages); called when a config is made."""
    store = values.get(DEFAULT_DSL_STORE)
    if store is not None and store not in _STORE_TYPES:
        raise ConfigError(f"Invalid value {store} for configuration {DEFAULT_DSL_STORE}: String must be one of: "
                          f"{ROCKS_DB}, {IN_MEMORY}")
    store_format = values.get(DSL_STORE_FORMAT)
    if store_format is not None and (not isinstance(store_format, str)
                                     or store_format.upper() not in (FORMAT_HEADERS, FORMAT_DEFAULT)):
        raise ConfigError(f"Invalid value {store_format} for configuration {DSL_STORE_FORMAT}: String must be one "
                          f"of (case insensitive): {FORMAT_HEADERS}, {FORMAT_DEFAULT}")
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


def headers_format(config: Any) -> bool:
    """Whether the application asks for headers-aware DSL stores (`dsl.store.format=HEADERS`, any case)."""
    value = config.get(DSL_STORE_FORMAT)
    return isinstance(value, str) and value.upper() == FORMAT_HEADERS
