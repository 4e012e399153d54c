"""`VersionedKeyValueStoreBuilder`: a versioned bytes store supplier plus serdes and logging.

Versioned stores never cache (Kafka Streams refuses `withCachingEnabled` on them). Their changelog
is compacted, and compaction waits for the history retention plus a day before it may drop an old
version of a key (`min.compaction.lag.ms`), as Kafka Streams' `VersionedChangelogTopicConfig` sets
it unless the user's logging config names it.
"""

from __future__ import annotations

from typing import Any, Self

from streamlet.errors import TopologyError
from streamlet.serdes import resolve_serde
from streamlet.stores.builders import ConfigurableStoreBuilder
from streamlet.stores.versioned.api import VersionedBytesStoreSupplier
from streamlet.stores.versioned.typed import TypedVersionedKeyValueStore

ADDITIONAL_COMPACTION_LAG_MS = 24 * 60 * 60 * 1000
_MAX_LONG = 2**63 - 1


def versioned_changelog_config(history_retention_ms: int) -> dict[str, str]:
    lag = min(history_retention_ms + ADDITIONAL_COMPACTION_LAG_MS, _MAX_LONG)
    return {"cleanup.policy": "compact", "min.compaction.lag.ms": str(lag)}


class VersionedKeyValueStoreBuilder(ConfigurableStoreBuilder):
    """Builds versioned stores, `VersionedKeyValueStore` (`Stores.versioned_key_value_store_builder`)."""

    def __init__(self, supplier: VersionedBytesStoreSupplier, key_serde: Any = None, value_serde: Any = None) -> None:
        if not isinstance(supplier, VersionedBytesStoreSupplier):
            raise TypeError(f"a versioned store builder needs a versioned store supplier such as "
                            f"Stores.persistent_versioned_key_value_store(name, history_retention), got {supplier!r}")
        self.supplier = supplier
        self.name = supplier.name
        self.key_serde = resolve_serde(key_serde)
        self.value_serde = resolve_serde(value_serde)
        self.persistent = supplier.persistent
        self.logging_enabled = True
        self.caching_enabled = False
        self.logging_config = self._changelog_defaults()

    @property
    def history_retention_ms(self) -> int:
        return self.supplier.history_retention_ms

    def _changelog_defaults(self) -> dict[str, str]:
        return versioned_changelog_config(self.supplier.history_retention_ms)

    def with_caching_enabled(self) -> Self:
        raise TopologyError(f"versioned store {self.name!r}: versioned stores do not support caching")

    def build(self) -> TypedVersionedKeyValueStore:
        return TypedVersionedKeyValueStore(self.supplier.get(), self.key_serde, self.value_serde,
                                           logging_enabled=self.logging_enabled)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.supplier!r}, {self.key_serde!r}, {self.value_serde!r}, "
                f"logging_enabled={self.logging_enabled})")
