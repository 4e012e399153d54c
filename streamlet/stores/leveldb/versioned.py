"""The LevelDB versioned store: Kafka Streams' segmented layout in one LevelDB key-value store.

Kafka Streams keeps a versioned store's latest values and its segments as key prefixes of one RocksDB
instance; that maps onto this backend's key-value bytes store (`keyvalue.py`) as it is, so there is no
separate LevelDB versioned bytes store: `SegmentedVersionedBytesStore` (stores/versioned/segmented.py)
runs over a `LevelDBKeyValueBytesStore` in `<state dir>/<store name>`.
"""

from __future__ import annotations

from streamlet.stores.keyvalue.api import KeyValueBytesStore
from streamlet.stores.leveldb.keyvalue import LevelDBKeyValueBytesStore
from streamlet.stores.versioned.suppliers import SegmentedVersionedBytesStoreSupplier


class LevelDBVersionedBytesStoreSupplier(SegmentedVersionedBytesStoreSupplier):
    """What `Stores.persistent_versioned_key_value_store` returns."""

    factory_name = "persistent_versioned_key_value_store"

    def _key_value_store(self) -> KeyValueBytesStore:
        return LevelDBKeyValueBytesStore(self.name)

    @property
    def persistent(self) -> bool:
        return True

    @property
    def metrics_scope(self) -> str:
        return "leveldb"
