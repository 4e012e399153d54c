"""State stores: bytes stores (LevelDB, in-memory), change-logging, caching and typed layers.

Every store is built from the same layers, inner to outer: bytes store -> change-logging (when
logging is on) -> cache (when caching is on and the task has a cache budget) -> typed facade.
See `api.py` for the contracts and `factory.py` for the public `Stores` factory.
"""

from streamlet.stores.api import (
    CachedStateStore,
    KeyValueBytesStore,
    KeyValueBytesStoreSupplier,
    KeyValueIterator,
    KeyValueStore,
    StateStore,
    StoreBuilder,
    TimestampedKeyValueStore,
    ValueAndTimestamp,
)
from streamlet.stores.factory import Stores
from streamlet.stores.window.api import TimestampedWindowStore, WindowBytesStoreSupplier, WindowStore

__all__ = [
    "CachedStateStore",
    "KeyValueBytesStore",
    "KeyValueBytesStoreSupplier",
    "KeyValueIterator",
    "KeyValueStore",
    "StateStore",
    "StoreBuilder",
    "Stores",
    "TimestampedKeyValueStore",
    "TimestampedWindowStore",
    "ValueAndTimestamp",
    "WindowBytesStoreSupplier",
    "WindowStore",
]
