"""Window stores: values per key and window start, with retention, on LevelDB or in memory.

Layers as for key-value stores (see `streamlet.stores`): bytes store -> change-logging -> typed
facade, with the record cache (caching.py) between the last two when caching is on. `api.py` has
the contracts, `Stores` (factory.py) the public factories.
"""

from streamlet.stores.window.api import (
    TimestampedWindowStore,
    WindowBytesStore,
    WindowBytesStoreSupplier,
    WindowStore,
)
from streamlet.stores.window.builders import TimestampedWindowStoreBuilder, WindowStoreBuilder

__all__ = [
    "TimestampedWindowStore",
    "TimestampedWindowStoreBuilder",
    "WindowBytesStore",
    "WindowBytesStoreSupplier",
    "WindowStore",
    "WindowStoreBuilder",
]
