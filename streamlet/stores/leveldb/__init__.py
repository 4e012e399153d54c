"""The persistent backend: one LevelDB database (via plyvel) per store and task."""

from streamlet.stores.leveldb.store import LevelDBKeyValueBytesStore
from streamlet.stores.leveldb.supplier import LevelDBKeyValueBytesStoreSupplier

__all__ = ["LevelDBKeyValueBytesStore", "LevelDBKeyValueBytesStoreSupplier"]
