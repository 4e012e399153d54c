"""What `Stores.persistent_timestamped_key_value_store_with_headers(name)` returns: a LevelDB bytes store per task,
meant for `Stores.timestamped_key_value_store_with_headers_builder` (the builder picks the value format)."""

from __future__ import annotations

from streamlet.stores.leveldb.supplier import LevelDBKeyValueBytesStoreSupplier


class LevelDBKeyValueHeadersBytesStoreSupplier(LevelDBKeyValueBytesStoreSupplier):
    """A LevelDB key-value store for a timestamped key-value store with headers."""

    def __init__(self, name: str) -> None:
        super().__init__(name, timestamped=True)

    def __repr__(self) -> str:
        return f"Stores.persistent_timestamped_key_value_store_with_headers({self.name!r})"
