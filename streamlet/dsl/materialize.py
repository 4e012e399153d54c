"""Turning a `Materialized` into the store builder of a DSL node (Kafka Streams' store materializer).

The DSL's key-value stores are timestamped (each value remembers the timestamp of the record that
wrote it): persistent LevelDB unless the user asked for memory or gave a supplier, change-logged and
cached unless switched off. Built only when the topology is written, so the store layer is imported
then and not when the DSL module is.
"""

from __future__ import annotations

from streamlet.dsl.options import Materialized
from streamlet.stores.api import StoreBuilder


def timestamped_store_builder(materialized: Materialized, store_name: str) -> StoreBuilder:
    from streamlet.stores.factory import Stores

    supplier = materialized.store_supplier
    if supplier is None:
        supplier = (Stores.in_memory_key_value_store(store_name) if materialized.in_memory
                    else Stores.persistent_timestamped_key_value_store(store_name))
    builder: StoreBuilder = Stores.timestamped_key_value_store_builder(
        supplier, materialized.key_serde, materialized.value_serde
    )
    if materialized.logging:
        builder = builder.with_logging_enabled(materialized.log_config)
    else:
        builder = builder.with_logging_disabled()
    return builder.with_caching_enabled() if materialized.caching else builder.with_caching_disabled()
