"""Window stores: values per key and window start, with retention.

Layers as for key-value stores (see `streamlet.stores`): bytes store (`leveldb/window.py`,
`memory/window.py`, `spark/window.py`) -> change-logging -> typed facade, with the record cache
(`caching.py`) between the last two when caching is on. `api.py` has the contracts, `suppliers.py`
what `Stores.persistent_window_store` & co. return, `key_schema.py` Kafka Streams' changelog keys.
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
