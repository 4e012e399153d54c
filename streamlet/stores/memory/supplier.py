"""What `Stores.in_memory_key_value_store(name)` returns: a fresh in-memory bytes store per task."""

from __future__ import annotations

from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueBytesStoreSupplier
from streamlet.stores.memory.keyvalue import InMemoryKeyValueBytesStore


class InMemoryKeyValueBytesStoreSupplier(KeyValueBytesStoreSupplier):
    def __init__(self, name: str) -> None:
        self.name = name

    def get(self) -> KeyValueBytesStore:
        return InMemoryKeyValueBytesStore(self.name)

    @property
    def persistent(self) -> bool:
        return False

    @property
    def metrics_scope(self) -> str:
        return "in-memory"

    def __repr__(self) -> str:
        return f"Stores.in_memory_key_value_store({self.name!r})"
