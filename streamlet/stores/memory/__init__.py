"""The in-memory backend: a dict plus a lazily sorted key index; restored from its changelog."""

from streamlet.stores.memory.store import InMemoryKeyValueBytesStore
from streamlet.stores.memory.supplier import InMemoryKeyValueBytesStoreSupplier

__all__ = ["InMemoryKeyValueBytesStore", "InMemoryKeyValueBytesStoreSupplier"]
