"""The in-memory backend: restored from the changelog at every start.

`keyvalue.py` is a dict plus a lazily sorted key index, `window.py` windows in dicts by start;
session stores are kept in its key-value bytes store.
"""

from streamlet.stores.memory.keyvalue import InMemoryKeyValueBytesStore
from streamlet.stores.memory.supplier import InMemoryKeyValueBytesStoreSupplier

__all__ = ["InMemoryKeyValueBytesStore", "InMemoryKeyValueBytesStoreSupplier"]
