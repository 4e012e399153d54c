"""What `Stores.persistent_window_store(...)` and `Stores.in_memory_window_store(...)` return.

A supplier carries the store's shape (retention, window size, whether it retains duplicates) and
makes a fresh bytes store per task; the builder adds serdes and logging.
"""

from __future__ import annotations

from streamlet.stores.leveldb.window import LevelDBWindowBytesStore
from streamlet.stores.memory.window import InMemoryWindowBytesStore
from streamlet.stores.window.api import WindowBytesStore, WindowBytesStoreSupplier


class _WindowSupplier(WindowBytesStoreSupplier):
    factory_name = ""

    def __init__(self, name: str, retention_ms: int, window_size_ms: int, retain_duplicates: bool) -> None:
        self.name = name
        self.retention_ms = retention_ms
        self.window_size_ms = window_size_ms
        self.retain_duplicates = retain_duplicates

    def __repr__(self) -> str:
        return (f"Stores.{self.factory_name}({self.name!r}, {self.retention_ms}, {self.window_size_ms}, "
                f"retain_duplicates={self.retain_duplicates})")


class LevelDBWindowBytesStoreSupplier(_WindowSupplier):
    factory_name = "persistent_window_store"
    time_first = False
    """True for the time-ordered store of an `on_window_close` aggregation (see `LevelDBWindowBytesStore`)."""

    def get(self) -> WindowBytesStore:
        return LevelDBWindowBytesStore(self.name, self.retention_ms, self.time_first)

    @property
    def persistent(self) -> bool:
        return True

    @property
    def metrics_scope(self) -> str:
        return "leveldb-window"


class InMemoryWindowBytesStoreSupplier(_WindowSupplier):
    factory_name = "in_memory_window_store"

    def get(self) -> WindowBytesStore:
        return InMemoryWindowBytesStore(self.name, self.retention_ms)

    @property
    def persistent(self) -> bool:
        return False

    @property
    def metrics_scope(self) -> str:
        return "in-memory-window"
