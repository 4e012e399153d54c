"""The in-memory versioned store: Kafka Streams' segmented layout in an in-memory key-value store.

Kafka Streams has only a persistent (RocksDB) versioned store. streamlet keeps the same layout, with
the same rules and answers, in this backend's key-value bytes store (`keyvalue.py`): there is no
separate in-memory versioned bytes store, `SegmentedVersionedBytesStore` runs over an
`InMemoryKeyValueBytesStore`. Like every in-memory store it is rebuilt from its changelog at each start.
"""

from __future__ import annotations

from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.memory.keyvalue import InMemoryKeyValueBytesStore
from streamlet.stores.versioned.suppliers import SegmentedVersionedBytesStoreSupplier


class InMemoryVersionedBytesStoreSupplier(SegmentedVersionedBytesStoreSupplier):
    """What `Stores.in_memory_versioned_key_value_store` returns."""

    factory_name = "in_memory_versioned_key_value_store"

    def _key_value_store(self) -> KeyValueBytesStore:
        return InMemoryKeyValueBytesStore(self.name)

    @property
    def persistent(self) -> bool:
        return False

    @property
    def metrics_scope(self) -> str:
        return "in-memory"
