"""The persistent backend: one LevelDB database (via plyvel) per store and task.

`keyvalue.py` and `window.py` are its bytes stores (window stores in time segments); session stores
are kept in its key-value bytes store.
"""

from streamlet.stores.leveldb.keyvalue import LevelDBKeyValueBytesStore
from streamlet.stores.leveldb.supplier import LevelDBKeyValueBytesStoreSupplier

__all__ = ["LevelDBKeyValueBytesStore", "LevelDBKeyValueBytesStoreSupplier"]
