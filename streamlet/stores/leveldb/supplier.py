"""What `Stores.persistent_key_value_store(name)` returns: a fresh LevelDB bytes store per task.

`timestamped` only records which factory made it (`persistent_timestamped_key_value_store`): the
bytes store is format-agnostic, and the builder decides whether values carry a timestamp prefix.
"""

from __future__ import annotations

from streamlet.stores.keyvalue.api import KeyValueBytesStore, KeyValueBytesStoreSupplier
from streamlet.stores.leveldb.keyvalue import LevelDBKeyValueBytesStore


class LevelDBKeyValueBytesStoreSupplier(KeyValueBytesStoreSupplier):
    def __init__(self, name: str, *, timestamped: bool = False) -> None:
        self.name = name
        self.timestamped = timestamped

    def get(self) -> KeyValueBytesStore:
        return LevelDBKeyValueBytesStore(self.name)

    @property
    def persistent(self) -> bool:
        return True

    @property
    def metrics_scope(self) -> str:
        return "leveldb"

    def __repr__(self) -> str:
        factory = "persistent_timestamped_key_value_store" if self.timestamped else "persistent_key_value_store"
        return f"Stores.{factory}({self.name!r})"
